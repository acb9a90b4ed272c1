"""What a training loop dispatches a step, counted as a GPU would launch it (:mod:`lib.dispatch_counts`): inside any
loop (:class:`StepDispatch`) or around ``train.py``'s batches (:class:`TrainStepDispatch`, a Lightning callback)."""
from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from lightning.pytorch.callbacks import Callback

from lib.dispatch_counts import Dispatched, HostReads, RecurrentCallsAsOne


class StepDispatch:
    """What a training loop dispatches a step, counted as a GPU would launch it (:mod:`lib.dispatch_counts`: the
    recurrent layers' calls one kernel each way): ``start()`` and ``end()`` around each step; steps ``skip`` and
    later are counted, up to ``steps`` of them; ``record()`` the figures a step (kernels, views, host reads and the
    operators most dispatched). Used by :class:`TrainStepDispatch` and by ``benchmarks/infersent_nli.py`` inside
    InferSent's own loop."""

    def __init__(self, steps: int = 4, skip: int = 1) -> None:
        self.steps, self.skip, self.seen = steps, skip, 0
        self.counter = Dispatched()
        self.reads = HostReads()
        self.stack: contextlib.ExitStack | None = None

    def start(self) -> None:
        if self.skip <= self.seen < self.skip + self.steps:
            self.stack = contextlib.ExitStack()
            self.stack.enter_context(self.counter)
            self.stack.enter_context(RecurrentCallsAsOne(self.counter))
            self.stack.enter_context(self.reads)

    def end(self) -> None:
        if self.stack is not None:
            self.stack.close()
            self.stack = None
        self.seen += 1

    def record(self) -> dict[str, Any]:
        n = max(1, min(self.steps, self.seen - self.skip))
        return {"steps_counted": n, "kernels_a_step": round(self.counter.kinds["kernels"] / n, 2),
                "views_a_step": round(self.counter.kinds["views"] / n, 2),
                "host_reads_a_step": round(sum(self.reads.counts.values()) / n, 2),
                "host_reads": dict(self.reads.counts),
                "operators_a_step": {k: round(v / n, 2) for k, v in self.counter.names.most_common(40)
                                     if not k.startswith("metadata")}}


class TrainStepDispatch(Callback):
    """:class:`StepDispatch` around ``train.py``'s training batches (forward, backward, clipping and update: what
    Lightning runs between a batch's start and end), written to ``output`` when fitting ends
    (``+callbacks.step_dispatch._target_=lib.step_dispatch.TrainStepDispatch
    +callbacks.step_dispatch.output=<json>``)."""

    def __init__(self, output: str, steps: int = 4, skip: int = 1) -> None:
        self.output = Path(output)
        self.dispatch = StepDispatch(steps, skip)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.dispatch.start()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.dispatch.end()

    def on_fit_end(self, trainer, pl_module) -> None:
        self.output.parent.mkdir(parents=True, exist_ok=True)
        self.output.write_text(json.dumps(self.dispatch.record()))
