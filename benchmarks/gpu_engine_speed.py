"""The evaluation engine's classifiers on this machine's GPU against its CPU, on the same 4096-d vectors (the GPU
check, issue 45).

    SENTENCE_DATA=../shared/data python benchmarks/gpu_engine_speed.py [--tasks MR,TREC,SICKRelatedness]
    python benchmarks/gpu_engine_speed.py --smoke       # 256-d, a tiny generated SentEval tree, CPU against CPU

The vectors are those of ``benchmarks/eval_speed.py --high-dim``: ``bow_glove`` times a fixed Gaussian matrix
(50 -> 4096, seed 0), so the classifiers are timed alone. Per task, the prototype protocol runs once with
``evaluation.device=cuda`` and once with ``device=cpu`` (the CPU's fused kernels where they apply, all its cores),
on the same features: seconds of each, the ratio, and both scores (the GPU takes the torch path, whose sums run in
another order: docs/evaluation.md, "On a GPU", says how far apart the scores may be). The figures go to a JSON record
(``--output``, default ``logs/benchmarks/gpu_engine_speed/<time>.json``). On a GPU the engine records each epoch of
a probe's steps as a CUDA graph (``evaluation.cuda_graphs``); ``cuda-stepped`` in ``--devices`` runs it without
graphs, one step at a time, for comparison (the default on a GPU: ``cuda,cuda-stepped,cpu``).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from lib import engine_timing, records, smoke_inputs, timing
from sentence_lab.evaluation import regimes
from sentence_lab.evaluation.protocol import PROTOTYPE, ProtocolParams
from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TASKS = "MR,TREC,SICKRelatedness"
SCORE_KEYS = ("acc", "devacc", "pearson", "spearman", "devpearson")


def warm_up(devices: list[str], dim: int) -> None:
    """One small fit per device first, so that CUDA's start and the CPU kernels' compilation stay out of the times."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((200, dim)).astype(np.float32), rng.integers(0, 2, 200)
    for device in devices:
        regimes.kfold_then_test(X[:150], y[:150], X[150:], y[150:], protocol(device), 2)


def protocol(device: str) -> ProtocolParams:
    """The prototype protocol on ``device`` (``cuda-stepped``: CUDA without step graphs)."""
    name, _, variant = device.partition("-")
    return dataclasses.replace(PROTOTYPE, device=name, cuda_graphs=variant != "stepped")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=DEFAULT_TASKS)
    parser.add_argument("--dim", type=int, default=4096)
    parser.add_argument("--devices", default="cuda,cuda-stepped,cpu" if torch.cuda.is_available() else "cpu,cpu",
                        help="comma-separated; cuda-stepped: CUDA without step graphs")
    records.add_options(parser, "256-d vectors of MR and SICKRelatedness of a tiny generated SentEval tree")
    args = parser.parse_args(argv)
    run = records.start("gpu_engine_speed", args, ROOT)
    with tempfile.TemporaryDirectory(prefix="gpu_engine_speed_") as tmp:
        if args.smoke:
            args.dim, args.tasks = 256, "MR,SICKRelatedness"
            data = smoke_inputs.tiny_senteval(Path(tmp) / "data")
        else:
            data = Path(os.environ.get("SENTENCE_DATA", ROOT / "data"))
        loaded = engine_timing.loaded_tasks(args.tasks, data)
    projection = EmbeddingCache(engine_timing.ProjectedBow(args.dim), batch_size=128)
    devices = args.devices.split(",")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads"
          + (f", {torch.cuda.get_device_name()}" if torch.cuda.is_available() else "")
          + f"; {args.dim}-d vectors, prototype protocol", flush=True)
    warm_up(devices, args.dim)
    print(f"\n| task | d | {' | '.join(f'{d} s' for d in devices)} | ratio | "
          f"{' | '.join(f'score {d}' for d in devices)} |\n|---|---|{'---|' * (2 * len(devices) + 1)}", flush=True)
    rows = []
    for task in loaded:
        spec = task.spec
        X, y = engine_timing.task_features(task, projection.embed)
        seconds, scores = [], []
        for device in devices:
            params = protocol(device)
            t0 = time.perf_counter()
            result = engine_timing.run_regime(spec, X, y, params, task.data.nclasses)
            timing.synchronize(torch.device(params.device))
            seconds.append(time.perf_counter() - t0)
            scores.append({k: float(result[k]) for k in SCORE_KEYS if k in result})
        key = "acc" if "acc" in scores[0] else "pearson"
        row = {"task": spec.name, "d": next(iter(X.values())).shape[1], "devices": devices, "seconds": seconds,
               "scores": scores, "ratio": seconds[-1] / seconds[0]}
        rows.append(row)
        print(f"| {spec.name} | {row['d']} | {' | '.join(f'{s:.2f}' for s in seconds)} | {row['ratio']:.1f}x | "
              f"{' | '.join(f'{s[key]:.4f}' for s in scores)} |", flush=True)
    run.write({"dim": args.dim, "devices": devices, "cpu_threads": torch.get_num_threads(), "tasks": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
