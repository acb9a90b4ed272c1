"""Two nodes on this machine: two torchrun launchers, node ranks 0 and 1, one process each, their c10d rendezvous and
gloo on 127.0.0.1 (the loopback interface only), ``trainer.num_nodes=2``. The run is the one-node two-process run's,
weight for weight; the corpus is prepared once and the per-epoch suite runs once, on global rank 0; a node whose
process is killed mid-epoch is named by the one left, and ``resume=true`` on both nodes completes the run."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch

from lib.local_nodes import free_port, torchrun
from tests.helpers import processes
from tests.training.test_ddp_cpu import FAULTS, ROOT, ddp_command, ddp_env

pytestmark = pytest.mark.slow  # end-to-end: outside the fast tier (-m "not slow")

TRAIN = ROOT / "train.py"


def _nodes(script: Path, tiny_corpus: Path, tmp_path: Path, *overrides: str, **env: str) -> list[tuple[int, str]]:
    """Both nodes' torchrun launchers, started together; each one's exit code and output."""
    port = free_port()
    launchers = []
    for node in (0, 1):
        cmd = ddp_command(script, tiny_corpus, tmp_path, "trainer.devices=1", "trainer.num_nodes=2", *overrides)
        launchers.append(processes.start([*torchrun(node, port), *cmd[1:]], cwd=tmp_path, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True,
                                         env=ddp_env(GLOO_SOCKET_IFNAME="lo", **env)))
    outputs = [launcher.communicate(timeout=600)[0] for launcher in launchers]
    return [(launcher.returncode, out) for launcher, out in zip(launchers, outputs)]


def _weights(run: Path) -> dict[str, torch.Tensor]:
    return torch.load(run / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)["state_dict"]


@pytest.mark.second_part  # a minute of two torchrun nodes: CI's second part
def test_two_nodes_train_the_one_node_two_process_run_with_the_suite_once_on_rank_zero(tiny_corpus, senteval_root,
                                                                                      tmp_path):
    suite = [f"callbacks.eval_suite.data_dir={senteval_root}", "callbacks.eval_suite.tasks=[Length]",
             "callbacks.eval_suite.probing=xprobe", "callbacks.eval_suite.params.l2_grid=[1e-3]",
             "callbacks.eval_suite.params.max_epoch=4"]
    two_nodes = tmp_path / "two_nodes"
    ended = _nodes(TRAIN, tiny_corpus, tmp_path, f"hydra.run.dir={two_nodes}", "trainer.max_epochs=1", *suite)
    assert [code for code, _ in ended] == [0, 0], ended[0][1][-3000:] + ended[1][1][-3000:]
    output = "".join(out for _, out in ended)
    assert output.count("Preparing ") == 1 and output.count("Opened the prepared corpus") == 1  # once, then opened
    assert "GLOBAL_RANK: 0, MEMBER: 1/2" in output and "GLOBAL_RANK: 1, MEMBER: 2/2" in output
    status = json.loads((two_nodes / "run_status.json").read_text())
    assert status["complete"] and status["steps_done"] == status["steps_planned"]
    assert sorted(p.name for p in (two_nodes / "eval").glob("epoch_*.json")) == ["epoch_000.json", "epoch_001.json"]
    # rank 1 keeps a log of its own (the job name of the ranks Lightning starts) and runs no evaluation
    rank_one_log = (two_nodes / "train_ddp_process_1.log").read_text()
    assert "evaluation suite" not in rank_one_log and "evaluation suite" in (two_nodes / "train.log").read_text()

    one_node = tmp_path / "one_node"
    done = processes.run(ddp_command(TRAIN, tiny_corpus, tmp_path, f"hydra.run.dir={one_node}", "trainer.max_epochs=1",
                                     *suite), cwd=tmp_path, env=ddp_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    theirs, ours = _weights(one_node), _weights(two_nodes)
    assert sorted(theirs) == sorted(ours)
    for name, value in theirs.items():
        torch.testing.assert_close(ours[name], value, rtol=1e-6, atol=1e-7, msg=name)


@pytest.mark.second_part  # a minute of two torchrun nodes: CI's second part
def test_a_node_killed_mid_epoch_is_named_and_resume_on_both_nodes_completes_the_run(tiny_corpus, tmp_path):
    run = tmp_path / "run"
    common = [f"hydra.run.dir={run}", "~callbacks.eval_suite", "trainer.max_epochs=6",
              "trainer.strategy.timeout.seconds=60"]
    ended = _nodes(FAULTS, tiny_corpus, tmp_path, *common, KILL_RANK_AT_STEP="20")
    codes = sorted(code for code, _ in ended)
    assert codes == [1, 1], [out[-2000:] for _, out in ended]  # each launcher: its rank killed, or ended by it
    lines = [line for _, out in ended for line in out.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: DDP rank 0: the connection to rank 1 closed (its sign of life stopped")
    assert "resume=true" in lines[0]

    resumed = _nodes(TRAIN, tiny_corpus, tmp_path, *common, "resume=true")
    assert [code for code, _ in resumed] == [0, 0], resumed[0][1][-3000:] + resumed[1][1][-3000:]
    status = json.loads((run / "run_status.json").read_text())
    assert status["complete"] and status["steps_done"] == status["steps_planned"] and status["epochs_done"] == 6


def test_ranks_without_one_run_directory_are_refused_in_one_line(tiny_corpus, tmp_path):
    ended = _nodes(TRAIN, tiny_corpus, tmp_path, "~callbacks.eval_suite")
    assert [code for code, _ in ended] == [1, 1]
    # each rank refuses in one line; a node whose rank is slower may instead be ended by torchrun when the other
    # node's launcher, which holds the rendezvous, exits first (a machine under load): never a second line, or another
    errors = [[line for line in out.splitlines() if line.startswith("error:")] for _, out in ended]
    assert all(len(lines) <= 1 for lines in errors) and any(errors), errors
    for (line,) in filter(None, errors):
        assert "give every node the same hydra.run.dir=" in line
    assert not (tmp_path / "logs").exists()  # nothing was written
