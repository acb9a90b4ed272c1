"""A stop resumes from the newest state the run saved (issue 85): SIGTERM while epoch 1's suite runs, or in epoch 1's
validation, of a two-epoch run that also saves every few steps; then ``resume=true`` or
``ckpt_path=<run>/checkpoints/last.ckpt``, with training counted in epochs or in steps: no training step trained twice,
every scalar logged at the steps, and as many times, as the same run never stopped logs it (TensorBoard's event files
and the CSV), epoch 1's scores written and logged once, epoch 2 trained and scored."""
from __future__ import annotations

import csv
import json
import os
import signal
from collections import Counter
from pathlib import Path

import pytest

from sentence_lab.checkpoints.received import read_checkpoint
from tests.helpers import processes
from tests.helpers.in_process import run_command
from tests.helpers.logged_points import csv_steps, tensorboard_steps
from tests.helpers.senteval_tree import make_senteval_tree
from tests.helpers.train_config import sweep_command

pytestmark = [pytest.mark.slow, pytest.mark.second_part]  # stopped trainings and their resumes

ROOT = Path(__file__).resolve().parents[2]
TASKS = "[Length,WordContent]"
STEPS_PER_EPOCH = 15  # the tiny corpus in batches of 8


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")


def _command(tiny_corpus: Path, senteval_root: Path, tmp_path: Path, *overrides: str) -> list[str]:
    return [a for a in sweep_command(tiny_corpus, senteval_root, tmp_path, TASKS, "encoder=bow", "logger=many",
                                     "trainer.max_epochs=2", "trainer.log_every_n_steps=1", "data.batch_size=8",
                                     # a save point inside each epoch, as the qt recipe's, before the epoch's end
                                     "callbacks.last_checkpoint.every_n_train_steps=4",
                                     f"hydra.run.dir={tmp_path / 'run'}", *overrides)
            if not a.startswith("hydra.sweep.dir")]


def _stop_at(cmd: list[str], tmp_path: Path, phase: str, nth: int) -> None:
    """Run ``cmd``, SIGTERM at the ``nth`` start of ``phase`` (``tests/helpers/signal_at.py``)."""
    at = ["+hydra.callbacks.signal._target_=tests.helpers.signal_at.SignalAtPhase",
          f"+hydra.callbacks.signal.phase={phase}", f"+hydra.callbacks.signal.nth={nth}",
          "+hydra.callbacks.signal.signal=SIGTERM"]
    done = processes.run(cmd + at, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 128 + signal.SIGTERM, done.stderr[-3000:]


def counted_points(steps: dict[str, list[int]]) -> dict[str, Counter]:
    """How many points each tag has at each step (Lightning logs ``epoch`` with every call: twice at an epoch's end)."""
    return {tag: Counter(found) for tag, found in steps.items()}


@pytest.fixture(scope="module")
def uninterrupted(tiny_corpus, tmp_path_factory) -> Path:
    """The same run, never stopped: what the stopped and resumed one must have logged."""
    tmp_path = tmp_path_factory.mktemp("uninterrupted")
    cmd = _command(tiny_corpus, make_senteval_tree(tmp_path / "data"), tmp_path)
    done = run_command(cmd, cwd=tmp_path, env=_env())
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp_path / "run"


@pytest.mark.parametrize("phase,nth,how,counted", [
    ("suite", 2, "resume=true", []),  # the suite after epoch 1 (the first is epoch 0's, before training)
    ("suite", 2, "ckpt_path", ["trainer.max_steps=30"]),  # the same, training counted in steps
    ("validation", 4, "resume=true", []),  # epoch 1's first validation batch (after the sanity check's two)
])
def test_a_stop_resumes_from_the_newest_state_with_nothing_twice(phase, nth, how, counted, uninterrupted, tiny_corpus,
                                                                 senteval_root, tmp_path):
    cmd = _command(tiny_corpus, senteval_root, tmp_path, *counted)
    run = tmp_path / "run"
    _stop_at(cmd, tmp_path, phase, nth)
    stopped_at = int(read_checkpoint(run / "checkpoints" / "interrupted.ckpt")["global_step"])
    assert stopped_at == STEPS_PER_EPOCH and STEPS_PER_EPOCH % 4, "the epoch's end must not be a step save point"
    assert int(read_checkpoint(run / "checkpoints" / "last.ckpt")["global_step"]) == stopped_at
    assert max(csv_steps(run)["train/loss_step"]) == stopped_at - 1  # Lightning logs step k's loss at step k - 1

    again = cmd + (["resume=true"] if how == "resume=true" else [f"ckpt_path={run / 'checkpoints' / 'last.ckpt'}"])
    done = run_command(again, cwd=tmp_path, env=_env())
    assert done.returncode == 0, done.stderr[-3000:]

    status = json.loads((run / "run_status.json").read_text())
    assert status["complete"] and status["steps_done"] == 2 * STEPS_PER_EPOCH
    assert sorted(csv_steps(run)["train/loss_step"]) == list(range(2 * STEPS_PER_EPOCH)), "a step twice or missing"
    # every scalar at the steps, and as many times, as the run never stopped logged it
    assert counted_points(csv_steps(run)) == counted_points(csv_steps(uninterrupted))
    assert counted_points(tensorboard_steps(run)) == counted_points(tensorboard_steps(uninterrupted))
    for epoch in (1, 2):  # each epoch's suite written whole
        doc = json.loads((run / "eval" / f"epoch_{epoch:03d}.json").read_text())
        assert set(doc["results"]) == {"Length", "WordContent"} and "eval_seconds" in doc
    assert tensorboard_steps(run)["probing/Length"] == csv_steps(run)["probing/Length"] == [0, 1, 2]
    # the training means of each epoch are those of the run that never stopped (no batch of epoch 1 in epoch 2's)
    assert _column(run, "train/loss_epoch") == pytest.approx(_column(uninterrupted, "train/loss_epoch"))


def _column(run: Path, key: str) -> list[float]:
    with open(run / "csv" / "metrics.csv", newline="") as f:
        return [float(row[key]) for row in csv.DictReader(f) if row.get(key)]
