"""Training on a GPU (``trainer=gpu``): every encoder family trains Quick-Thoughts in float32 and bf16-mixed with the
parameters, batches and vectors on the GPU; a checkpoint written there embeds the same on the CPU; compiled
encoders train."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch._dynamo.utils import counters

from sentence_lab.encoders.base import SentenceEncoder
from sentence_lab.runs.run import fit
from sentence_lab.training.module import SentenceModel
from sentence_lab.training.trainer_state import callbacks_of
from tests.helpers import processes
from tests.helpers.device_probe import DeviceProbe
from tests.helpers.train_config import compose_train_cfg

pytestmark = [pytest.mark.gpu, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]

ENCODERS = ["bow", "gru", "bilstm_max", "bilstm_last", "gatedconv", "mc_bilstm_max"]
QUIET = ["logger=none", "~callbacks.rich_progress_bar", "~callbacks.model_summary"]
SENTENCES = ["The old man saw the river.", "A dog ran", "Why did the young woman walk under the blue tree slowly?",
             "red", "The cat sat with the man and the dog, but the house was old."]
FLOAT32_TOLERANCE = 1e-5  # relative (Frobenius) difference of GPU and CPU vectors, float32 both
BF16_TOLERANCE = 2e-2  # the GPU's vectors under bf16 (or float16) autocast against the CPU's float32 ones
HALF = {"bf16-mixed": torch.bfloat16, "16-mixed": torch.float16}


def gpu_run(tiny_corpus, tmp_path, overrides: list[str]) -> tuple:
    overrides = ["trainer=gpu", "trainer.max_steps=3", "trainer.max_epochs=1", "trainer.num_sanity_val_steps=0",
                 "++trainer.limit_val_batches=1", "trainer.log_every_n_steps=1", "test_after_fit=false",
                 "+callbacks.device_probe._target_=tests.helpers.device_probe.DeviceProbe", *QUIET, *overrides]
    trainer, model = fit(compose_train_cfg(tiny_corpus, tmp_path, overrides))
    probe = next(c for c in callbacks_of(trainer) if isinstance(c, DeviceProbe))
    return trainer, model, probe


def relative_difference(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b.astype(np.float64)))


@pytest.mark.parametrize("precision", ["32-true", "bf16-mixed", "16-mixed"])
@pytest.mark.parametrize("encoder", ENCODERS)
def test_every_encoder_trains_on_the_gpu_and_its_checkpoint_embeds_alike_on_the_cpu(encoder, precision, tiny_corpus,
                                                                                     tmp_path, record_property):
    trainer, _, probe = gpu_run(tiny_corpus, tmp_path, [f"encoder={encoder}", f"trainer.precision={precision}"])
    assert trainer.state.finished and trainer.global_step == 3
    assert torch.isfinite(trainer.callback_metrics["train/loss_step"])
    assert probe.parameter_devices == {"cuda"} and probe.batch_devices == {"cuda"}
    assert probe.vectors_device == "cuda"
    half = HALF.get(precision)
    assert probe.vectors_dtype == (half if half and encoder != "bow" else torch.float32)  # bow: autocast keeps means
    assert (getattr(trainer.precision_plugin, "scaler", None) is not None) == (precision == "16-mixed")  # fp16 scales

    ckpt = tmp_path / "gpu.ckpt"
    trainer.save_checkpoint(ckpt)
    on_cpu = SentenceModel.load_checkpoint(str(ckpt), map_location="cpu")
    on_gpu = SentenceModel.load_checkpoint(str(ckpt), map_location="cuda")
    assert {p.device.type for p in on_gpu.parameters()} == {"cuda"}
    cpu_vectors = on_cpu.encode(SENTENCES)
    float32_error = relative_difference(on_gpu.encode(SENTENCES), cpu_vectors)
    record_property("float32_relative_difference", float32_error)
    assert float32_error < FLOAT32_TOLERANCE
    if half:
        with torch.autocast("cuda", dtype=half):
            bf16_error = relative_difference(on_gpu.encode(SENTENCES), cpu_vectors)
        record_property(f"{precision}_relative_difference", bf16_error)
        assert bf16_error < BF16_TOLERANCE and (bf16_error > 0 or encoder == "bow")  # bow: no matrix product


def test_compiled_encoders_train_on_the_gpu(tiny_corpus, tmp_path):
    torch._dynamo.reset()
    counters.clear()
    trainer, model, probe = gpu_run(tiny_corpus, tmp_path, ["encoder=bilstm_max", "model.compile=true"])
    assert trainer.state.finished and trainer.global_step == 3
    assert torch.isfinite(trainer.callback_metrics["train/loss_step"])
    assert probe.parameter_devices == {"cuda"} and probe.vectors_device == "cuda"
    encoders = [m for m in model.objective.modules() if isinstance(m, SentenceEncoder)]
    assert encoders and all(m._compiled_call_impl is not None for m in encoders)
    assert counters["stats"]["unique_graphs"] > 0


def test_ddp_trains_on_the_gpu_with_nccl(tiny_corpus, tmp_path):
    """``trainer=ddp`` on the machine's one GPU: a process group over NCCL, DDP's wrapper on CUDA, checkpoints that
    load (a machine of one GPU runs one rank; several ranks run on the CPU in tests/training/test_ddp_cpu.py)."""
    cmd = [sys.executable, str(ROOT / "train.py"), "trainer=ddp", "trainer.accelerator=gpu", "trainer.devices=1",
           "encoder=bilstm_max", "encoder.hidden_dim=32", "trainer.max_steps=3", "trainer.max_epochs=1",
           "trainer.num_sanity_val_steps=0", "++trainer.limit_val_batches=1", "data.batch_size=8", "logger=none",
           "print_config=false", "test_after_fit=false", "~callbacks.eval_suite",
           f"data.train_dir={tiny_corpus / 'train'}", f"data.valid_dir={tiny_corpus / 'valid'}",
           f"paths.cache_dir={tmp_path / 'cache'}", f"paths.log_dir={tmp_path / 'logs'}"]
    done = processes.run(cmd, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = (tmp_path / "logs" / "train" / "runs").iterdir()
    log = (run / "train.log").read_text() + done.stdout + done.stderr
    assert "distributed_backend=nccl" in log and "MEMBER: 1/1" in log, log[-2000:]
    last = run / "checkpoints" / "last.ckpt"
    model = SentenceModel.load_checkpoint(str(last), map_location="cpu")
    assert np.isfinite(model.encode(SENTENCES)).all()
