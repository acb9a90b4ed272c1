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
classifier step is one call of the engine's optimiser step (``MaskedOptimizer.step``) with its gradients and its
share of the epoch's row gathers (``StackedProbe.epoch_gradients``); what the rest (set-up, the model selection, the
dev checks, the scoring) dispatches is reported apart, and host reads per classifier epoch (``BatchPlan.epoch``). The
table goes to a JSON record (``--output``). The counters: ``benchmarks/lib/dispatch_counts.py``.
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

from lib import engine_timing, records, smoke_inputs
from lib.dispatch_counts import CountedSteps, Dispatched, HostReads
from sentence_lab.evaluation.encoders.baselines import BowGloveEncoder
from sentence_lab.evaluation.protocol import PROTOTYPE
from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache

ROOT = Path(__file__).resolve().parents[1]
# The twelve tasks of the results table and two probing tasks, one of each classifier family and regime.
DEFAULT_TASKS = "MR,CR,SUBJ,MPQA,TREC,SICKRelatedness,STSBenchmark,STS12,Length,WordContent"


def count_task(task: Any, embed: Any, device: str = "cpu") -> dict[str, Any]:
    """One task's classifier protocol on the GPU's path, counted: per evaluation and per step."""
    X, y = engine_timing.task_features(task, embed)
    params = dataclasses.replace(PROTOTYPE, device=device, fused_kernels=False)
    counter = Dispatched()
    started = time.perf_counter()
    with counter, CountedSteps(counter) as steps, HostReads() as reads:
        engine_timing.run_regime(task.spec, X, y, params, task.data.nclasses)
    n, epochs = max(steps.steps, 1), max(steps.epochs, 1)
    return {"task": task.spec.name, "family": task.spec.family, "regime": task.spec.regime, "steps": steps.steps,
            "epochs": steps.epochs, "per_evaluation": dict(counter.kinds), "host_reads": dict(reads.counts),
            # what CUDA graphs can take (sentence_lab.evaluation.classifier.step_graphs): the epochs every group steps
            # through (without dropout, recorded once and replayed in one launch); the rest steps one by one on the host
            "recordable_epochs": steps.full_epochs, "recordable_steps": steps.full_epoch_steps,
            "kernels_a_step": round(counter.in_steps["kernels"] / n, 2),
            "views_a_step": round(counter.in_steps["views"] / n, 2),
            "kernels_outside_steps": counter.kinds["kernels"] - counter.in_steps["kernels"],
            "host_reads_an_epoch": round(sum(reads.counts.values()) / epochs, 3),
            "optimiser_step": {k: round(v / n, 2) for k, v in steps.optimiser.items()},
            "step_operators": {k: round(v / n, 2) for k, v in counter.step_names.most_common(20)},
            "seconds_counted": round(time.perf_counter() - started, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=DEFAULT_TASKS, help="comma-separated task names")
    records.add_options(parser, "MR and SICKRelatedness of a made-up SentEval tree")
    args = parser.parse_args(argv)
    run = records.start("suite_dispatch", args, ROOT)
    with tempfile.TemporaryDirectory(prefix="suite_dispatch_") as tmp:
        if args.smoke:
            args.tasks, data = "MR,SICKRelatedness", smoke_inputs.tiny_senteval(Path(tmp) / "data")
        else:
            data = Path(os.environ.get("SENTENCE_DATA", ROOT / "data"))
        loaded = engine_timing.loaded_tasks(args.tasks, data)
    embed = EmbeddingCache(BowGloveEncoder(), batch_size=128).embed
    print("bow_glove, the prototype protocol, evaluation.fused_kernels=false (the path a GPU takes), on the CPU\n")
    print("| task | family | steps | classifier epochs (recordable as graphs: epochs, steps) | kernels | a step | "
          "of which the optimiser's | views a step | outside the steps | host reads | an epoch |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    rows = []
    for task in loaded:
        row = count_task(task, embed)
        rows.append(row)
        reads = sum(row["host_reads"].values())
        print(f"| {row['task']} | {row['family']} | {row['steps']} | {row['epochs']} ({row['recordable_epochs']}, "
              f"{row['recordable_steps']}) | "
              f"{row['per_evaluation'].get('kernels', 0)} | {row['kernels_a_step']} | "
              f"{row['optimiser_step'].get('kernels', 0)} | {row['views_a_step']} | {row['kernels_outside_steps']} | "
              f"{reads} | {row['host_reads_an_epoch']} |", flush=True)
    families: dict[str, Counter[str]] = {}
    for row in rows:
        families.setdefault(row["family"], Counter()).update(
            row["per_evaluation"] | {"steps": row["steps"], "epochs": row["epochs"],
                                     "step kernels": round(row["kernels_a_step"] * row["steps"]),
                                     "host reads": sum(row["host_reads"].values())})
    print("\nper family, one evaluation: " + "; ".join(
        f"{family}: {c['steps']} steps, {c['step kernels'] / max(c['steps'], 1):.2f} kernels a step, "
        f"{c['kernels']} kernels in all, {c['host reads']} host reads "
        f"({c['host reads'] / max(c['epochs'], 1):.2f} a classifier epoch)" for family, c in families.items()))
    run.write({"encoder": "bow_glove", "protocol": "prototype", "fused_kernels": False,
               "torch_threads": torch.get_num_threads(), "tasks": rows,
               "families": {f: dict(c) for f, c in families.items()}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
