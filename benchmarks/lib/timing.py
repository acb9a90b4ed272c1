"""Clocks for the speed benchmarks: a median over synchronised calls, TF32 on or off, and a run's training loop timed
from inside (:class:`LoopTimer`, a Lightning callback given to ``train.py``)."""
from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.callbacks import Callback


def set_tf32(on: bool) -> None:
    """TF32 on or off for CUDA's matrix products and cuDNN (PyTorch allows it in cuDNN by default)."""
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def synchronize(device: torch.device) -> None:
    """Wait for ``device``'s queued work (a no-op on the CPU), so that a host clock times it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_seconds(fn: Callable[[], Any], device: torch.device, repeats: int, warmup: int = 2) -> float:
    """The median wall seconds of ``fn()`` over ``repeats`` calls after ``warmup``, ``device`` synchronised around
    each call."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        synchronize(device)
        t0 = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class LoopTimer(Callback):
    """A run's training loop timed from inside, for benchmarks that run ``train.py``
    (``+callbacks.loop_timer._target_=lib.timing.LoopTimer +callbacks.loop_timer.output=<json>``):
    seconds from the first training batch's start to the last one's end (data loading between batches included,
    validation after the last batch not), the batches run and the last validation's metrics, written to ``output``
    when fitting ends (by rank 0; another rank of a data-parallel run beside it)."""

    def __init__(self, output: str) -> None:
        self.output = Path(output)
        self.first: float | None = None
        self.last: float | None = None
        self.batches = 0
        self.metrics: dict[str, float] = {}

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if self.first is None:
            self.first = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.last = time.perf_counter()
        self.batches += 1

    def on_validation_end(self, trainer, pl_module) -> None:
        if not trainer.sanity_checking:
            self.metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("val/")}

    def on_fit_end(self, trainer, pl_module) -> None:
        seconds = (self.last - self.first) if self.first is not None and self.last is not None else None
        # each rank of a data-parallel run its own file: rank 0's at ``output``, rank k's beside it (``<name>.rank<k>``)
        output = self.output if trainer.global_rank == 0 else \
            self.output.with_name(f"{self.output.stem}.rank{trainer.global_rank}{self.output.suffix}")
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps({"seconds": seconds, "batches": self.batches, "metrics": self.metrics}))
