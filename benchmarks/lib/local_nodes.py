"""Nodes of a data-parallel run on this machine: a free loopback port for their rendezvous and each node's torchrun
launcher (c10d rendezvous on 127.0.0.1, one process a node), as docs/cluster.md gives the command. Used by
``benchmarks/two_nodes.py`` and ``tests/training/test_ddp_nodes.py``."""
from __future__ import annotations

import socket
import sys


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def torchrun(node: int, port: int, nodes: int = 2) -> list[str]:
    """The launcher of node ``node`` of ``nodes``, one process each, meeting at ``127.0.0.1:port``; the script and its
    arguments follow."""
    return [sys.executable, "-m", "torch.distributed.run", f"--nnodes={nodes}", "--nproc-per-node=1",
            f"--node-rank={node}", "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}",
            f"--rdzv-id=nodes-{port}", "--local-addr=127.0.0.1", "--max-restarts=0"]
