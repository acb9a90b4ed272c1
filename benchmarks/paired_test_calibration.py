"""The paired test's calibration and power: simulated pairs of models drawn from one real probe's per-item
probabilities (``benchmarks/lib/calibration.py``), the share the test calls different at 0.05 with nothing to
find, and with one side shifted by each of several differences (the detection curve on 1,000 items).

    python benchmarks/paired_test_calibration.py                           # 2,000 null pairs, 1,000 per difference
    python benchmarks/paired_test_calibration.py --pairs 500 --differences 0.02,0.05
    python benchmarks/paired_test_calibration.py --smoke                   # 100 pairs, two differences

The probe: logistic regression on GloVe bag-of-words vectors of the shipped probing set's Tense task (1,000 test
items, always present). Prints the rejection rate per difference, with its binomial standard error.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from lib import records
from lib.calibration import SHIPPED_TASK, real_probe_probabilities, rejection_rate, shifted

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000, help="simulated pairs per difference")
    parser.add_argument("--null-pairs", type=int, default=2000, help="simulated pairs with nothing to find")
    parser.add_argument("--differences", default="0.01,0.02,0.03,0.04,0.05,0.07,0.10",
                        help="accuracy differences (fractions) injected into one side")
    records.add_options(parser, "100 pairs with nothing to find, 100 at each of two differences")
    args = parser.parse_args()
    run = records.start("paired_test_calibration", args, ROOT)
    pairs, null_pairs = (100, 100) if run.smoke else (args.pairs, args.null_pairs)
    differences = [0.05, 0.10] if run.smoke else [float(d) for d in args.differences.split(",")]
    gold, p = real_probe_probabilities()
    print(f"probe: {SHIPPED_TASK}, {len(gold)} test items, mean probability of the gold label {p.mean():.3f}")
    rows = []
    print("| difference (points) | pairs | rejected at 0.05 | standard error |\n|---|---|---|---|")
    for points, count, seed in [(0.0, null_pairs, 1)] + [(d, pairs, 2 + i) for i, d in enumerate(differences)]:
        rate = rejection_rate(gold, p, shifted(p, points) if points else p, count, seed)
        error = math.sqrt(rate * (1 - rate) / count)
        rows.append({"difference": points, "pairs": count, "rejection_rate": rate, "standard_error": error})
        print(f"| {100 * points:.0f} | {count} | {100 * rate:.1f}% | {100 * error:.1f} |", flush=True)
    run.write({"task": SHIPPED_TASK, "items": len(gold), "mean_gold_probability": float(p.mean()), "rows": rows})


if __name__ == "__main__":
    main()
