"""What a GPU would be asked to do for each task of the suite, counted on the CPU: the operators of the classifiers'
path a GPU takes (``evaluation.fused_kernels=false``), per task and family, per evaluation and per classifier step.

    SENTENCE_DATA=../shared/data python benchmarks/suite_dispatch.py                  # the default tasks, bow_glove
    SENTENCE_DATA=../shared/data python benchmarks/suite_dispatch.py --tasks SICKRelatedness,MR,Length
    python benchmarks/suite_dispatch.py --smoke        # a made-up SentEval tree, in seconds

A GPU evaluation of these small classifiers is bound by kernel launches and host synchronisations, not by arithmetic.
Every ATen operator a task's classifier protocol dispatches (its features made first, outside the count) is sorted
by what it would cost on a GPU: ``kernels`` (operators that launch one: arithmetic, reductions, copies, fills, in-place
updates), ``views`` (views and aliases, which launch none), ``metadata`` (shape and layout queries), ``allocations``
(``empty``), and ``host reads`` (``item()``, ``tolist()``, a tensor's truth value: on a GPU, a synchronisation). A
classifier step is one call of the engine's optimiser step (``MaskedOptimizer.step``); what the steps and the rest
(set-up, the model selection, the scoring) dispatch is reported apart. The table goes to a JSON record (``--output``).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from sentence_lab import benchmarking as benchmark
from sentence_lab.evaluation.baselines import BowGloveEncoder
from sentence_lab.evaluation.classifier import MaskedOptimizer
from sentence_lab.evaluation.embedding_cache import EmbeddingCache
from sentence_lab.evaluation.protocol import PROTOTYPE

ROOT = Path(__file__).resolve().parents[1]
# The twelve tasks of the results table and two probing tasks, one of each classifier family and regime.
DEFAULT_TASKS = "MR,CR,SUBJ,MPQA,TREC,SICKRelatedness,STSBenchmark,STS12,Length,WordContent"
METADATA = {"size", "stride", "sym_size", "sym_stride", "sym_numel", "dim", "is_contiguous", "numel",
            "sym_storage_offset", "storage_offset", "is_same_size", "is_non_overlapping_and_dense"}
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

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        what = kind(func)
        self.kinds[what] += 1
        self.names[f"{what}: {func.__name__}"] += 1
        if self.stepping:
            self.in_steps[what] += 1
            self.step_names[f"{what}: {func.__name__}"] += 1
        return func(*args, **(kwargs or {}))


class HostReads:
    """Host reads of tensor values counted at Python's level (``item``, ``tolist``, ``cpu``, ``numpy``, a truth value):
    on the CPU most of them dispatch no operator, and on a GPU each is a synchronisation (``cpu`` and ``numpy`` of a
    tensor already on the host count too: the engine calls them on the device's tensors)."""

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
            self.counts[name] += 1
            return original(tensor, *args, **kwargs)
        return counted

    def __exit__(self, *exc: object) -> None:
        for name, original in self.originals.items():
            setattr(torch.Tensor, name, original)


class CountedSteps:
    """``MaskedOptimizer.step`` counted, and the operators inside it marked as the step's, while in place."""

    def __init__(self, counter: Dispatched) -> None:
        self.counter, self.steps = counter, 0
        self.original = MaskedOptimizer.step

    def __enter__(self) -> CountedSteps:
        original, counts = self.original, self

        def step(optimizer, *args, **kwargs):
            counts.steps += 1
            counts.counter.stepping = True
            try:
                return original(optimizer, *args, **kwargs)
            finally:
                counts.counter.stepping = False

        MaskedOptimizer.step = step  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        MaskedOptimizer.step = self.original  # type: ignore[method-assign]


def count_task(task: Any, embed: Any, device: str = "cpu") -> dict[str, Any]:
    """One task's classifier protocol on the GPU's path, counted: per evaluation and per step."""
    X, y = benchmark.task_features(task, embed)
    params = dataclasses.replace(PROTOTYPE, device=device, fused_kernels=False)
    counter = Dispatched()
    started = time.perf_counter()
    with counter, CountedSteps(counter) as steps, HostReads() as reads:
        benchmark.run_regime(task.spec, X, y, params, task.data.nclasses)
    n = max(steps.steps, 1)
    return {"task": task.spec.name, "family": task.spec.family, "regime": task.spec.regime, "steps": steps.steps,
            "per_evaluation": dict(counter.kinds), "host_reads": dict(reads.counts),
            "kernels_a_step": round(counter.kinds["kernels"] / n, 2),
            "views_a_step": round(counter.kinds["views"] / n, 2),
            "host_reads_a_step": round(sum(reads.counts.values()) / n, 3),
            "optimiser_step": {k: round(v / n, 2) for k, v in counter.in_steps.items()},
            "step_operators": {k: round(v / max(steps.steps, 1), 2) for k, v in counter.step_names.most_common(20)},
            "seconds_counted": round(time.perf_counter() - started, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=DEFAULT_TASKS, help="comma-separated task names")
    benchmark.add_options(parser, "MR and SICKRelatedness of a made-up SentEval tree")
    args = parser.parse_args(argv)
    run = benchmark.start("suite_dispatch", args, ROOT)
    with tempfile.TemporaryDirectory(prefix="suite_dispatch_") as tmp:
        if args.smoke:
            args.tasks, data = "MR,SICKRelatedness", benchmark.tiny_senteval(Path(tmp) / "data")
        else:
            data = Path(os.environ.get("SENTENCE_DATA", ROOT / "data"))
        loaded = benchmark.loaded_tasks(args.tasks, data)
    embed = EmbeddingCache(BowGloveEncoder(), batch_size=128).embed
    print("bow_glove, the prototype protocol, evaluation.fused_kernels=false (the path a GPU takes), on the CPU\n")
    print("| task | family | steps | kernels | a step | of which the optimiser's | views a step | host reads | "
          "a step |\n|---|---|---|---|---|---|---|---|---|", flush=True)
    rows = []
    for task in loaded:
        row = count_task(task, embed)
        rows.append(row)
        reads = sum(row["host_reads"].values())
        print(f"| {row['task']} | {row['family']} | {row['steps']} | {row['per_evaluation'].get('kernels', 0)} | "
              f"{row['kernels_a_step']} | {row['optimiser_step'].get('kernels', 0)} | {row['views_a_step']} | "
              f"{reads} | {row['host_reads_a_step']} |", flush=True)
    families: dict[str, Counter[str]] = {}
    for row in rows:
        families.setdefault(row["family"], Counter()).update(
            row["per_evaluation"] | {"steps": row["steps"], "host reads": sum(row["host_reads"].values())})
    print("\nper family, one evaluation: " + "; ".join(
        f"{family}: {c['steps']} steps, {c['kernels']} kernels ({c['kernels'] / max(c['steps'], 1):.1f} a step), "
        f"{c['host reads']} host reads" for family, c in families.items()))
    run.write({"encoder": "bow_glove", "protocol": "prototype", "fused_kernels": False,
               "torch_threads": torch.get_num_threads(), "tasks": rows,
               "families": {f: dict(c) for f, c in families.items()}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
