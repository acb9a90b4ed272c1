"""A lost rank is named: its process on this host has ended, or its sign of life went stale; a rank with no sign
(a run directory not every node sees) is not guessed at. And the one line a lost peer ends a run with."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from sentence_lab.runs.errors import PeerLost
from sentence_lab.runs.rank_liveness import sign_of_life, silent_ranks


def _sign(run: Path, rank: int, pid: int, age_s: float = 0.0, host: str | None = None) -> None:
    path = sign_of_life(run, rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{host or socket.gethostname()} {pid} 0\n")  # a process record, its start time unknown
    then = time.time() - age_s
    os.utime(path, (then, then))


def _ended_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


def test_a_rank_whose_process_ended_on_this_host_is_named_at_once(tmp_path):
    _sign(tmp_path, 0, os.getpid())
    _sign(tmp_path, 1, _ended_pid())
    started = time.monotonic()
    assert silent_ranks(tmp_path, 2, me=0) == [1]
    assert time.monotonic() - started < 1


def test_a_stale_sign_is_named_and_a_beating_one_elsewhere_is_not(tmp_path):
    _sign(tmp_path, 1, 1, age_s=60, host="another-node")
    _sign(tmp_path, 2, 1, host="another-node")  # alive on a host we cannot look into: its sign is kept fresh
    beating = threading.Event()

    def beat() -> None:
        while not beating.wait(0.05):
            sign_of_life(tmp_path, 2).touch()

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        assert silent_ranks(tmp_path, 3, me=0, stale_s=0.5) == [1]
        assert silent_ranks(tmp_path, 3, me=1, stale_s=0.5) == []  # looked for 1.5 s: rank 2 kept beating
    finally:
        beating.set()
        thread.join()


def test_a_rank_without_a_sign_is_not_guessed_at(tmp_path):
    assert silent_ranks(tmp_path, 2, me=0, stale_s=0.2) == []


def test_the_line_names_the_lost_rank_and_says_how_it_was_lost():
    closed = RuntimeError("[gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:42130")
    line = str(PeerLost(0, 1800, closed, [1]))
    assert line.startswith("DDP rank 0: the connection to rank 1 closed (its sign of life stopped")
    assert "resume=true" in line and "timeout" not in line.split("(RuntimeError")[0]
    waited = str(PeerLost(1, 10, RuntimeError("Timed out waiting 10000ms for recv operation")))
    assert waited.startswith("DDP rank 1: a peer did not answer within the process group's timeout (10 s), so another "
                             "rank died or hangs") and "trainer.strategy.timeout.seconds" in waited
