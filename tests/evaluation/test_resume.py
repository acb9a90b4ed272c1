"""kill -9 in the middle of an epoch, then resume: the rest of the run equals an uninterrupted one, bit for bit."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.helpers import processes
from tests.helpers.in_process import run_command

ROOT = Path(__file__).resolve().parents[2]


def _train(tiny_corpus: Path, senteval_root: Path, run: Path, cache: Path, *extra: str,
           here: bool = True) -> subprocess.CompletedProcess:
    """``train.py``: in this process when ``here`` (what it trains and writes is the same), else a process of its own
    (the one killed)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    cmd = [sys.executable, str(ROOT / "train.py"), "encoder=bow", "encoder.embed_dim=16",
           "encoder.embedding_init=random", "trainer.max_epochs=2", "trainer.val_check_interval=1.0",
           "trainer.log_every_n_steps=1", "data.batch_size=8", "callbacks.last_checkpoint.every_n_train_steps=3",
           "callbacks=[default,epoch_checkpoints]", "print_config=false", "logger=tensorboard",
           f"data.train_dir={tiny_corpus / 'train'}", f"data.valid_dir={tiny_corpus / 'valid'}",
           f"paths.cache_dir={cache}", f"hydra.run.dir={run}", f"callbacks.eval_suite.data_dir={senteval_root}",
           "callbacks.eval_suite.tasks=[Length,STS13]", "callbacks.eval_suite.params.l2_grid=[1e-3]",
           "callbacks.eval_suite.params.max_epoch=4", *extra]
    if here:
        return run_command(cmd, cwd=run.parent, env=env, timeout=600)
    return processes.run(cmd, cwd=run.parent, env=env, capture_output=True, text=True, timeout=600)


def _losses(run: Path) -> dict[int, float]:
    acc = EventAccumulator(str(run / "tensorboard"))
    acc.Reload()
    return {e.step: e.value for e in acc.Scalars("train/loss_step")}


@pytest.mark.slow
def test_kill_9_mid_epoch_then_resume_equals_the_straight_run(tiny_corpus, senteval_root, tmp_path):
    cache = tmp_path / "cache"
    straight, killed, resumed = tmp_path / "straight", tmp_path / "killed", tmp_path / "resumed"
    assert _train(tiny_corpus, senteval_root, straight, cache).returncode == 0
    died = _train(tiny_corpus, senteval_root, killed, cache, "+callbacks.kill._target_=tests.helpers.kill_at.KillAt",
                  "+callbacks.kill.step=7", here=False)
    assert died.returncode == -9  # SIGKILL, in the middle of epoch 0 (15 batches), last saved at step 6
    last = killed / "checkpoints" / "last.ckpt"
    assert torch.load(last, weights_only=False)["global_step"] == 6
    done = _train(tiny_corpus, senteval_root, resumed, cache, f"ckpt_path={last}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert not resumed.exists()  # a checkpoint of a run goes on in that run's directory, its log with it
    resumed = killed
    a = torch.load(straight / "checkpoints" / "epoch_001.ckpt", weights_only=False)["state_dict"]
    b = torch.load(resumed / "checkpoints" / "epoch_001.ckpt", weights_only=False)["state_dict"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    before, after = _losses(straight), _losses(resumed)
    assert after == before  # the killed part and the resumed part make the straight run's loss curve
    for epoch in ("epoch_001.json", "epoch_002.json"):  # the per-epoch scores after the resume
        want = json.loads((straight / "eval" / epoch).read_text())["results"]
        got = json.loads((resumed / "eval" / epoch).read_text())["results"]
        assert {t: r["main_score"] for t, r in got.items()} == {t: r["main_score"] for t, r in want.items()}
