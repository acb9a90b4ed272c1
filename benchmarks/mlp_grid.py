"""The probing paper's MLP grid on one task: seconds to train it, and what it chose.

The features are a fixed random encoder's: Gaussian sentences through a random ``tanh`` layer to ``--d`` dimensions
(an untrained network's kind of vectors), labelled by a random two-layer teacher, so the task is learnable but not
linearly. The grid is ``evaluation=probing_paper``'s: nhid [50, 100, 200] x dropout [0, 0.1, 0.2] x the four L2
values, SentEval's ``full`` parameters, trained by ``evaluation.classifier.fit_members`` of this checkout, or of the
one ``ENGINE_CHECKOUT`` names (so two checkouts time the same work side by side):

    python benchmarks/mlp_grid.py [--n 9000] [--d 512] [--classes 6] [--threads 2]
    ENGINE_CHECKOUT=<other tree> python benchmarks/mlp_grid.py --n 2000 --d 256
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

CHECKOUT = Path(os.environ.get("ENGINE_CHECKOUT", Path(__file__).resolve().parents[1])).resolve()
sys.path.insert(0, str(CHECKOUT))

from sentence_lab.evaluation.classifier import Group, fit_members  # noqa: E402
from sentence_lab.evaluation.protocol import ProtocolParams  # noqa: E402


def task(n: int, d: int, classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sentences = rng.standard_normal((n, 64))
    X = np.tanh(sentences @ rng.standard_normal((64, d)) / 8.0).astype(np.float32)
    teacher = np.tanh(sentences @ rng.standard_normal((64, 32))) @ rng.standard_normal((32, classes))
    return X, teacher.argmax(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=9000, help="training sentences (dev: a ninth as many)")
    parser.add_argument("--d", type=int, default=512)
    parser.add_argument("--classes", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    params = ProtocolParams(name="full", kfold=10, optim="adam", batch_size=64, tenacity=5, epoch_size=4)
    shapes = [(n, p) for n in (50, 100, 200) for p in (0.0, 0.1, 0.2)]
    members = [(shape, reg) for shape in shapes for reg in params.l2_grid]
    ndev = args.n // 9
    X, y = task(args.n + ndev, args.d, args.classes)
    start = time.perf_counter()
    res = fit_members(X[: args.n], y[: args.n], [Group(np.arange(args.n), np.arange(ndev))],
                      [reg for _, reg in members], params, args.classes, Xdev=X[args.n :], ydev=y[args.n :],
                      hidden=[shape for shape, _ in members])
    seconds = time.perf_counter() - start
    dev = res.dev_accuracy()[0]
    best = int(np.argmax(dev))
    print(f"{CHECKOUT}: {len(members)} members on {args.n} x {args.d}, {args.classes} classes: {seconds:.1f} s; "
          f"epochs trained {int(res.nepoch.min())}-{int(res.nepoch.max())}; best on dev {100 * dev[best]:.2f}% "
          f"(nhid {members[best][0][0]}, dropout {members[best][0][1]}, l2 {members[best][1]})")


if __name__ == "__main__":
    main()
