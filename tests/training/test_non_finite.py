"""A NaN or inf loss or gradient never becomes the run's weights (training.non_finite, checkpoint guards)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
import torch
from lightning import LightningModule, Trainer

from sentence_lab.checkpoints.callbacks import BestCheckpoint
from sentence_lab.checkpoints.lightning_io import AtomicCheckpointIO
from sentence_lab.checkpoints.non_finite_weights import NonFiniteWeights, non_finite_tensors
from sentence_lab.runs.run import fit
from sentence_lab.training.non_finite import NonFiniteSteps
from sentence_lab.training.non_finite_checks import NonFiniteShare, NonFiniteTraining
from tests.helpers import processes
from tests.helpers.in_process import run_command
from tests.helpers.train_config import compose_train_cfg
from tests.helpers.weight_snapshots import AllWeightSnapshots

ROOT = Path(__file__).resolve().parents[2]
QUICK = ["encoder=bow", "encoder.embed_dim=16", "encoder.embedding_init=random", "trainer.max_steps=12",
         "trainer.max_epochs=5", "trainer.val_check_interval=1.0", "trainer.num_sanity_val_steps=0", "logger=none",
         "~callbacks.rich_progress_bar", "~callbacks.model_summary"]
INJECT = "+callbacks.inject._target_=tests.helpers.non_finite_at.NonFiniteLossAt"
SNAPSHOTS = "+callbacks.snapshots._target_=tests.helpers.weight_snapshots.AllWeightSnapshots"


def _status(run: Path) -> dict:
    return json.loads((run / "run_status.json").read_text())


def _finite_checkpoints(run: Path) -> dict[str, bool]:
    return {p.name: not non_finite_tensors(torch.load(p, weights_only=False)["state_dict"])
            for p in sorted((run / "checkpoints").glob("*.ckpt"))}


@pytest.mark.slow
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_one_non_finite_step_is_skipped_and_the_run_goes_on(value, tiny_corpus, tmp_path):
    cfg = compose_train_cfg(tiny_corpus, tmp_path, QUICK + [INJECT, "+callbacks.inject.steps=[4]",
                                                            f"+callbacks.inject.value={value}", SNAPSHOTS])
    trainer, model = fit(cfg)
    weights = next(c for c in trainer.callbacks if isinstance(c, AllWeightSnapshots)).weights
    assert len(weights) == 13  # before step 0, then after each of the 12 steps
    assert torch.equal(weights[5], weights[4])  # step 4 moved nothing
    assert not torch.equal(weights[4], weights[3]) and not torch.equal(weights[6], weights[5])  # its neighbours did
    assert all(bool(torch.isfinite(w).all()) for w in weights)
    status = _status(tmp_path)
    assert status["complete"] and status["steps_done"] == 12
    assert status["skipped_steps"] == 1 and status["skipped_step_numbers"] == [4]
    assert all(_finite_checkpoints(tmp_path).values())
    assert torch.isfinite(trainer.callback_metrics["train/loss_epoch"])  # the skipped batch is out of the means
    assert trainer.callback_metrics["train/skipped_steps"] == 1


@pytest.mark.slow
def test_a_run_that_skipped_too_large_a_share_of_its_steps_is_not_complete(tiny_corpus, tmp_path):
    """Never more than 3 in a row, but 8 of 12 steps skipped (a learning rate far too high): not the recipe's weights.
    One skip in 12 (8%) stays under the default share (0.1); two (17%) pass only a share set above it."""
    skipped = "+callbacks.inject.steps=[0,1,2,4,5,6,8,9]"
    cfg = compose_train_cfg(tiny_corpus, tmp_path / "many", QUICK + [INJECT, skipped])
    with pytest.raises(NonFiniteShare, match=r"skipped 8 of its 12 steps \(67%\).*max_share=0\.1"):
        fit(cfg)
    status = _status(tmp_path / "many")
    assert status == {**status, "complete": False, "stopped_by": "non_finite_share", "steps_done": 12,
                      "skipped_steps": 8}
    fit(compose_train_cfg(tiny_corpus, tmp_path / "one", QUICK + [INJECT, "+callbacks.inject.steps=[4]"]))
    assert _status(tmp_path / "one")["complete"] is True
    two = [INJECT, "+callbacks.inject.steps=[4,7]"]
    with pytest.raises(NonFiniteShare, match=r"2 of its 12 steps \(17%\)"):
        fit(compose_train_cfg(tiny_corpus, tmp_path / "two", QUICK + two))
    allowed = ["callbacks.non_finite_steps.max_share=0.2"]
    fit(compose_train_cfg(tiny_corpus, tmp_path / "allowed", QUICK + two + allowed))
    assert _status(tmp_path / "allowed")["complete"] is True


def test_a_share_outside_0_to_1_is_refused():
    with pytest.raises(ValueError, match="max_share=1.5"):
        NonFiniteSteps(max_share=1.5)


@pytest.mark.slow
def test_too_many_in_a_row_stop_the_run_with_the_last_finite_weights(tiny_corpus, tmp_path):
    cfg = compose_train_cfg(tiny_corpus, tmp_path, QUICK + [INJECT, "+callbacks.inject.from_step=4", SNAPSHOTS,
                                                            "callbacks.non_finite_steps.max_in_a_row=2"])
    with pytest.raises(NonFiniteTraining, match="stopped at step 6: 3 steps in a row had a non-finite loss"):
        fit(cfg)
    status = _status(tmp_path)
    assert status == {**status, "complete": False, "stopped_by": "non_finite_steps", "steps_done": 6,
                      "skipped_steps": 3, "skipped_step_numbers": [4, 5, 6]}
    interrupted = torch.load(tmp_path / "checkpoints" / "interrupted.ckpt", weights_only=False)
    flat = torch.cat([v.flatten() for k, v in interrupted["state_dict"].items()])
    assert bool(torch.isfinite(flat).all())
    # the weights as they were after step 3, the last finite step
    cfg_straight = compose_train_cfg(tiny_corpus, tmp_path / "straight", QUICK + ["trainer.max_steps=4"])
    _, straight = fit(cfg_straight)
    assert all(torch.equal(interrupted["state_dict"][k], v) for k, v in straight.state_dict().items())


@pytest.mark.slow
def test_weights_that_turned_inf_are_never_written(tiny_corpus, tmp_path):
    cfg = compose_train_cfg(tiny_corpus, tmp_path, QUICK + [
        "+callbacks.poison._target_=tests.helpers.non_finite_at.InfWeightAfter", "+callbacks.poison.step=3",
        "callbacks.last_checkpoint.every_n_train_steps=2", "callbacks.non_finite_steps.max_in_a_row=1"])
    with pytest.raises(NonFiniteTraining, match="stopped at step 5"):
        fit(cfg)
    checkpoints = _finite_checkpoints(tmp_path)
    assert "interrupted.ckpt" not in checkpoints  # refused: the weights hold an inf
    assert checkpoints == {"init.ckpt": True, "last.ckpt": True}
    assert torch.load(tmp_path / "checkpoints" / "last.ckpt", weights_only=False)["global_step"] == 4
    assert not _status(tmp_path)["complete"]


@pytest.mark.slow
def test_train_py_stops_in_one_line_with_exit_1(tiny_corpus, tmp_path):
    run = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    cmd = [sys.executable, str(ROOT / "train.py"), *QUICK, "~callbacks.eval_suite", "print_config=false",
           INJECT, "+callbacks.inject.from_step=2",
           "callbacks.non_finite_steps.max_in_a_row=3", f"data.train_dir={tiny_corpus / 'train'}",
           f"data.valid_dir={tiny_corpus / 'valid'}", "data.batch_size=8", f"paths.cache_dir={tmp_path / 'cache'}",
           f"hydra.run.dir={run}"]
    done = run_command(cmd, cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "stopped at step 5: 4 steps in a row had a non-finite loss" in errors[0]
    assert "Traceback" not in done.stderr
    assert (run / "checkpoints" / "interrupted.ckpt").is_file()
    assert _status(run)["stopped_by"] == "non_finite_steps"


def test_the_checkpoint_writer_refuses_non_finite_weights(tmp_path):
    io = AtomicCheckpointIO()
    target = tmp_path / "last.ckpt"
    io.save_checkpoint({"state_dict": {"w": torch.ones(3)}}, target)
    before = target.read_bytes()
    with pytest.raises(NonFiniteWeights, match=r"last.ckpt: the weights hold NaN or inf \(w\)"):
        io.save_checkpoint({"state_dict": {"w": torch.tensor([1.0, float("nan"), 2.0])}}, target)
    assert target.read_bytes() == before
    assert non_finite_tensors({"a": torch.tensor([float("inf")]), "b": torch.zeros(2), "n": torch.tensor([3])}) == ["a"]


def test_a_nan_monitored_value_never_becomes_best(tmp_path):
    best = BestCheckpoint(dirpath=tmp_path, filename="best", monitor="val/acc", mode="max")
    assert not best.check_monitor_top_k(None, torch.tensor(float("nan")))  # even with no best kept yet
    assert not best.check_monitor_top_k(None, torch.tensor(float("-inf")))
    assert best.check_monitor_top_k(None, torch.tensor(0.5))
    assert best.state_key.startswith("ModelCheckpoint{")  # earlier runs' best is found on resume


def test_the_limit_is_checked():
    with pytest.raises(ValueError, match="max_in_a_row=-1"):
        NonFiniteSteps(max_in_a_row=-1)


def _ddp(tiny_corpus: Path, tmp_path: Path, *overrides: str) -> tuple[subprocess.CompletedProcess, Path]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    cmd = [sys.executable, str(ROOT / "train.py"), "trainer=ddp_cpu", "trainer.strategy.timeout.seconds=60", *QUICK,
           "~callbacks.eval_suite", "print_config=false", INJECT, f"data.train_dir={tiny_corpus / 'train'}",
           f"data.valid_dir={tiny_corpus / 'valid'}", "data.batch_size=8", f"paths.cache_dir={tmp_path / 'cache'}",
           f"paths.log_dir={tmp_path / 'logs'}", *overrides]
    done = processes.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    (run,) = (tmp_path / "logs" / "train" / "runs").iterdir()
    return done, run


@pytest.mark.slow
def test_ddp_every_rank_skips_the_step_one_rank_found_non_finite(tiny_corpus, tmp_path):
    done, run = _ddp(tiny_corpus, tmp_path, "+callbacks.inject.steps=[2]", "+callbacks.inject.ranks=[1]",
                     "trainer.max_steps=6", "callbacks.non_finite_steps.max_share=null")  # 1 of 6: the share aside
    assert done.returncode == 0, done.stderr[-3000:]
    status = _status(run)
    assert status["complete"] and status["skipped_step_numbers"] == [2]
    assert all(_finite_checkpoints(run).values())


@pytest.mark.slow
def test_ddp_both_ranks_stop_at_the_same_step_without_a_hang(tiny_corpus, tmp_path):
    done, run = _ddp(tiny_corpus, tmp_path, "+callbacks.inject.from_step=2", "+callbacks.inject.ranks=[0]",
                     "callbacks.non_finite_steps.max_in_a_row=2")
    assert done.returncode == 1, done.stderr[-3000:]
    assert "stopped at step 4: 3 steps in a row had a non-finite loss" in done.stderr
    assert "did not answer" not in done.stderr  # no rank waited for another
    assert _status(run)["stopped_by"] == "non_finite_steps"
    assert _finite_checkpoints(run)["interrupted.ckpt"]


def _hooks_step(guard: NonFiniteSteps, losses: list[float], grad: float = 1.0) -> torch.nn.Parameter:
    """One optimiser step through the guard's hooks: a backward per micro-batch loss, then the step's check."""
    param = torch.nn.Parameter(torch.zeros(2))
    param.grad = torch.full((2,), grad)
    optimizer = torch.optim.SGD([param], lr=0.1)
    # stand-ins holding what the guard's hooks read of a Trainer and a LightningModule
    trainer = cast(Trainer, SimpleNamespace(world_size=1, global_step=7, precision_plugin=None))
    module = cast(LightningModule, SimpleNamespace(log=lambda *args, **kwargs: None))
    for loss in losses:
        guard.on_before_backward(trainer, module, torch.tensor(loss))
    guard.on_before_optimizer_step(trainer, module, optimizer)
    return param


def test_a_nan_in_any_micro_batch_of_an_accumulated_step_skips_it():
    guard = NonFiniteSteps(max_in_a_row=5)
    assert _hooks_step(guard, [float("nan"), 1.0]).grad is None  # the first of two micro-batches
    assert guard.skipped == [7] and guard.in_a_row == 1
    assert _hooks_step(guard, [1.0, 2.0]).grad is not None  # a clean step resets the count
    assert guard.in_a_row == 0 and guard.skipped_total == 1
    assert _hooks_step(guard, [1.0], grad=float("inf")).grad is None  # a gradient alone
    with pytest.raises(NonFiniteTraining, match="stopped at step 7: 2 steps in a row had a non-finite loss"):
        guard.max_in_a_row = 1
        _hooks_step(guard, [float("inf")])
