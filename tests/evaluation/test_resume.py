"""kill -9 in the middle of an epoch, then resume: the rest of the run equals an uninterrupted one: bit for bit for
an encoder without dropout; with dropout (a transformer) the same dropout masks (a resumed loader
draws nothing from torch's stream), the losses and weights the same to float rounding (a mask drawn anew moves a
step's loss by ~1e-3 here; what is left is ~1e-7, float rounding between processes)."""
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
BOW = ("encoder=bow", "encoder.embed_dim=16", "encoder.embedding_init=random")
TRANSFORMER = ("encoder=transformer", "encoder.d_model=16", "encoder.num_layers=1", "encoder.num_heads=2",
               "encoder.ffn_dim=32", "encoder.embed_dim=16", "encoder.embedding_init=random")  # dropout 0.1
# How far a dropout encoder's weights may end from the straight run's: the losses agree to ~1e-7 from the second
# step after the resume on, which Adam (each step divided by the gradient's own size) leaves at ~1e-7 in the weights
# but the key biases. A dropout mask drawn anew moves a step's loss by ~1e-3.
WEIGHTS_ATOL = 1e-5


def _train(tiny_corpus: Path, senteval_root: Path, run: Path, cache: Path, *extra: str, here: bool = True,
           encoder: tuple[str, ...] = BOW) -> subprocess.CompletedProcess:
    """``train.py``: in this process when ``here`` (what it trains and writes is the same), else a process of its own
    (the one killed)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    cmd = [sys.executable, str(ROOT / "train.py"), "trainer.max_epochs=2", "trainer.val_check_interval=1.0",
           "trainer.log_every_n_steps=1", "data.batch_size=8", "callbacks.last_checkpoint.every_n_train_steps=3",
           "callbacks=[default,epoch_checkpoints]", "print_config=false", "logger=tensorboard",
           f"data.train_dir={tiny_corpus / 'train'}", f"data.valid_dir={tiny_corpus / 'valid'}",
           f"paths.cache_dir={cache}", f"hydra.run.dir={run}", f"callbacks.eval_suite.data_dir={senteval_root}",
           "callbacks.eval_suite.tasks=[Length,STS13]", "callbacks.eval_suite.params.l2_grid=[1e-3]",
           "callbacks.eval_suite.params.max_epoch=4", *encoder, *extra]
    if here:
        return run_command(cmd, cwd=run.parent, env=env, timeout=600)
    return processes.run(cmd, cwd=run.parent, env=env, capture_output=True, text=True, timeout=600)


def _losses(run: Path) -> dict[int, float]:
    acc = EventAccumulator(str(run / "tensorboard"))
    acc.Reload()
    return {e.step: e.value for e in acc.Scalars("train/loss_step")}


def key_bias_out(name: str, weight: torch.Tensor) -> torch.Tensor:
    """``weight`` without its attention key bias, which no output depends on (``q . b_k`` is the same for every key of a
    query, and softmax ignores it): its gradient is float rounding alone, which Adam turns into steps of the rate's
    size, so a 1e-7 difference in the rest of the run moves it by ~5e-4."""
    if not name.endswith("attention.qkv.bias"):
        return weight
    q, _, v = weight.chunk(3)  # queries, keys, values
    return torch.cat([q, v])


@pytest.mark.slow
@pytest.mark.parametrize("encoder", [
    pytest.param(BOW, id="bow"),
    pytest.param(TRANSFORMER, id="transformer", marks=pytest.mark.second_part),
])
def test_kill_9_mid_epoch_then_resume_equals_the_straight_run(encoder, tiny_corpus, senteval_root, tmp_path):
    cache = tmp_path / "cache"
    straight, killed, resumed = tmp_path / "straight", tmp_path / "killed", tmp_path / "resumed"
    assert _train(tiny_corpus, senteval_root, straight, cache, encoder=encoder).returncode == 0
    died = _train(tiny_corpus, senteval_root, killed, cache, "+callbacks.kill._target_=tests.helpers.kill_at.KillAt",
                  "+callbacks.kill.step=7", here=False, encoder=encoder)
    assert died.returncode == -9  # SIGKILL, in the middle of epoch 0 (15 batches), last saved at step 6
    last = killed / "checkpoints" / "last.ckpt"
    assert torch.load(last, weights_only=False)["global_step"] == 6
    done = _train(tiny_corpus, senteval_root, resumed, cache, f"ckpt_path={last}", encoder=encoder)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not resumed.exists()  # a checkpoint of a run goes on in that run's directory, its log with it
    resumed = killed
    a = torch.load(straight / "checkpoints" / "epoch_001.ckpt", weights_only=False)["state_dict"]
    b = torch.load(resumed / "checkpoints" / "epoch_001.ckpt", weights_only=False)["state_dict"]
    before, after = _losses(straight), _losses(resumed)
    assert a.keys() == b.keys() and after.keys() == before.keys()
    if encoder == BOW:
        assert all(torch.equal(a[k], b[k]) for k in a)
        assert after == before  # the killed part and the resumed part make the straight run's loss curve
    else:
        for k in a:
            x, y = key_bias_out(k, a[k]), key_bias_out(k, b[k])
            assert torch.allclose(x.float(), y.float(), rtol=0, atol=WEIGHTS_ATOL), k
        assert after == pytest.approx(before, rel=1e-5, abs=0)
        # the step after the resume: the same dropout mask and batch (another mask or batch moves this loss by 1e-3 or
        # more); a float32 reduction in another process may round its last bit otherwise (2.4e-7 seen in CI)
        assert after[6] == pytest.approx(before[6], rel=1e-6, abs=0)
    for epoch in ("epoch_001.json", "epoch_002.json"):  # the per-epoch scores after the resume
        want = json.loads((straight / "eval" / epoch).read_text())["results"]
        got = json.loads((resumed / "eval" / epoch).read_text())["results"]
        got_scores = {t: r["main_score"] for t, r in got.items()}
        want_scores = {t: r["main_score"] for t, r in want.items()}
        assert got_scores == (want_scores if encoder == BOW else pytest.approx(want_scores, rel=1e-4))
