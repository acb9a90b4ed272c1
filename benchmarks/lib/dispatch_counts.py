"""What the classifier engine asks a device to do, counted on any device: the ATen operators dispatched (kernels,
views, metadata, allocations, host reads), the host reads of tensor values at Python's level, and which of them a
classifier step and a classifier epoch make (``benchmarks/suite_dispatch.py``; the per-step bound in
``tests/benchmarks/lib/test_dispatch_counts.py``).

A GPU evaluation of the small probes is bound by kernel launches and host synchronisations, not by arithmetic: on the
CPU, the path a GPU takes (``evaluation.fused_kernels=false``) dispatches the same operators, so they can be counted
without one.
"""
from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_unflatten

from sentence_lab.evaluation.classifier import BatchPlan, MaskedOptimizer, StackedProbe

__all__ = ["kind", "Dispatched", "HostReads", "CountedSteps", "RecurrentCallsAsOne"]

# shape and layout queries, and the profiler's markers (Lightning records each hook): none launches a kernel
METADATA = {"size", "stride", "sym_size", "sym_stride", "sym_numel", "dim", "is_contiguous", "numel",
            "sym_storage_offset", "storage_offset", "is_same_size", "is_non_overlapping_and_dense",
            "_record_function_enter", "_record_function_enter_new", "_record_function_exit"}
HOST_READS = {"_local_scalar_dense", "is_nonzero", "equal"}
ALLOCATIONS = {"empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided"}


def kind(func: Any) -> str:
    """What an ATen operator costs on a GPU: ``kernels``, ``views``, ``metadata``, ``allocations`` or ``host reads``."""
    name = func.__name__.split(".")[0]
    if name in HOST_READS:
        return "host reads"
    if name in METADATA:
        return "metadata"
    if name in ALLOCATIONS:
        return "allocations"
    returns = func._schema.returns
    if returns and all(r.alias_info is not None and not r.alias_info.is_write for r in returns):
        return "views"  # a view or an alias of an input: no kernel
    return "kernels"


class Dispatched(TorchDispatchMode):
    """Counts the ATen operators dispatched inside, by kind and by name, and apart inside the optimiser steps."""

    def __init__(self) -> None:
        super().__init__()
        self.kinds: Counter[str] = Counter()
        self.in_steps: Counter[str] = Counter()
        self.names: Counter[str] = Counter()
        self.step_names: Counter[str] = Counter()
        self.stepping = False
        self.paused = 0  # inside a call counted as one (count_as), nothing is counted

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not self.paused:
            self.count(kind(func), func.__name__)
        return func(*args, **(kwargs or {}))

    def count(self, what: str, name: str) -> None:
        """One operator of kind ``what`` named ``name``, marked as the step's while ``stepping``."""
        self.kinds[what] += 1
        self.names[f"{what}: {name}"] += 1
        if self.stepping:
            self.in_steps[what] += 1
            self.step_names[f"{what}: {name}"] += 1

    @contextlib.contextmanager
    def counted_as_one(self, name: str) -> Iterator[None]:
        """What runs inside counts as one kernel named ``name`` (a library call that is one kernel on a GPU)."""
        self.paused += 1
        try:
            yield
        finally:
            self.paused -= 1
        self.count("kernels", name)


class HostReads:
    """Host reads of tensor values counted at Python's level (``item``, ``tolist``, ``cpu``, ``numpy``, a truth value):
    on the CPU most of them dispatch no operator, and on a GPU each is a synchronisation (``cpu`` and ``numpy`` of a
    tensor already on the host count too: the engine calls them on the device's tensors), except a read of what
    ``cpu`` returned (``x.cpu().numpy()`` is one read)."""

    NAMES = ("item", "tolist", "cpu", "numpy", "__bool__")

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.originals = {name: getattr(torch.Tensor, name) for name in self.NAMES}

    def __enter__(self) -> HostReads:
        for name, original in self.originals.items():
            setattr(torch.Tensor, name, self._counted(name, original))
        return self

    def _counted(self, name: str, original: Any) -> Any:
        def counted(tensor, *args, **kwargs):
            if not getattr(tensor, "_read_to_host", False):
                self.counts[name] += 1
            out = original(tensor, *args, **kwargs)
            if name == "cpu":
                out._read_to_host = True
            return out
        return counted

    def __exit__(self, *exc: object) -> None:
        for name, original in self.originals.items():
            setattr(torch.Tensor, name, original)


class CountedSteps:
    """Classifier steps and epochs counted while in place: the operators of a step (its share of the epoch's
    gathers, its gradients, its update: ``StackedProbe.epoch_gradients`` and ``MaskedOptimizer.step``) marked as the
    steps', the optimiser's apart; an epoch is one ``BatchPlan.epoch``."""

    def __init__(self, counter: Dispatched) -> None:
        self.counter, self.steps, self.epochs = counter, 0, 0
        self.full_epochs = self.full_epoch_steps = 0  # epochs whose groups all step at every step, and their steps
        self.optimiser: Counter[str] = Counter()
        self.originals = (MaskedOptimizer.step, StackedProbe.epoch_gradients, BatchPlan.epoch)

    def _marked(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        self.counter.stepping = True
        try:
            return fn(*args, **kwargs)
        finally:
            self.counter.stepping = False

    def __enter__(self) -> CountedSteps:
        step_original, gradients_original, epoch_original = self.originals
        counts = self

        def step(optimizer, *args, **kwargs):
            counts.steps += 1
            before = Counter(counts.counter.in_steps)
            counts._marked(step_original, optimizer, *args, **kwargs)
            counts.optimiser.update(counts.counter.in_steps - before)

        def epoch_gradients(model, *args, **kwargs):
            each = counts._marked(gradients_original, model, *args, **kwargs)
            while True:
                try:
                    item = counts._marked(next, each)
                except StopIteration:
                    return
                yield item

        def epoch(plan, *args, **kwargs):
            counts.epochs += 1
            steps = epoch_original(plan, *args, **kwargs)
            if steps.active.all():  # every group steps at every step: on a GPU, one recorded graph (dropout aside)
                counts.full_epochs += 1
                counts.full_epoch_steps += len(steps.rows)
            return steps

        MaskedOptimizer.step = step  # type: ignore[method-assign,assignment]
        StackedProbe.epoch_gradients = epoch_gradients  # type: ignore[method-assign,assignment]
        BatchPlan.epoch = epoch  # type: ignore[method-assign,assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        MaskedOptimizer.step, StackedProbe.epoch_gradients, BatchPlan.epoch = self.originals  # type: ignore


class RecurrentCallsAsOne:
    """Inside, each call of torch's recurrent kernels (``torch._VF.lstm`` and ``gru``: ``nn.LSTM``'s, ``nn.GRU``'s
    and ``sentence_lab.encoders.rnn``'s) counts as one kernel forward and one backward, as cuDNN runs a packed batch
    on a GPU (every layer and direction in one call); on the CPU such a call is a loop of operators a time step,
    which are left out. The backward is that of the same call (its inputs' gradients through ``autograd.grad``), so
    the values are unchanged."""

    NAMES = ("lstm", "gru")

    def __init__(self, counter: Dispatched) -> None:
        self.counter = counter

    def __enter__(self) -> RecurrentCallsAsOne:
        for name in self.NAMES:
            setattr(torch._VF, name, self._one_call(name, getattr(torch._VF, name)))
        return self

    def __exit__(self, *exc: object) -> None:
        for name in self.NAMES:
            delattr(torch._VF, name)  # back to torch's own lookup

    def _one_call(self, name: str, call: Any) -> Any:
        counter = self.counter

        def counted(*args: Any) -> Any:
            flat, spec = tree_flatten(args)
            grads = [i for i, a in enumerate(flat) if isinstance(a, torch.Tensor) and a.requires_grad]
            if not (torch.is_grad_enabled() and grads):
                with counter.counted_as_one(f"{name} (one call)"):
                    return call(*args)
            return _OneCall.apply(counter, name, call, spec, flat, grads, *[flat[i] for i in grads])

        return counted


class _OneCall(torch.autograd.Function):
    """A recurrent call counted as one kernel forward and one backward (:class:`RecurrentCallsAsOne`)."""

    @staticmethod
    def forward(ctx: Any, counter: Dispatched, name: str, call: Any, spec: Any, flat: list, grads: list[int],
                *inputs: torch.Tensor) -> Any:
        with torch.enable_grad(), counter.counted_as_one(f"{name} forward (one call)"):
            leaves = [x.detach().requires_grad_() for x in inputs]
            args = list(flat)
            for i, leaf in zip(grads, leaves):
                args[i] = leaf
            outs, _ = tree_flatten(call(*tree_unflatten(args, spec)))
        ctx.counter, ctx.name, ctx.leaves, ctx.outs = counter, name, leaves, outs
        ctx.set_materialize_grads(False)  # an unused output's gradient stays None: no zeros made for the count
        return tuple(o.detach() for o in outs)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: torch.Tensor) -> Any:
        pairs = [(o, g) for o, g in zip(ctx.outs, grad_outputs) if g is not None and o.requires_grad]
        if not pairs:
            return (None,) * (6 + len(ctx.leaves))
        with ctx.counter.counted_as_one(f"{ctx.name} backward (one call)"):
            got = torch.autograd.grad([o for o, _ in pairs], ctx.leaves, [g for _, g in pairs], allow_unused=True)
        return (None,) * 6 + tuple(got)
