"""Our engine against SentEval's own outputs, every task and seed of ``senteval-reference-scores.json``.

    SENTENCE_DATA=../shared/data python benchmarks/check_reference_scores.py
    SENTENCE_DATA=../shared/data python benchmarks/check_reference_scores.py --sets prototype --seeds 1111

The file (``<data>/../docs/senteval-reference-scores.json``) holds SentEval's results (facebookresearch/SentEval
5d6dc11) for ``bow_glove`` under the prototype parameter set (5 seeds) and a subset under the full set. Each
(task, seed) runs through ``evaluation.runner.run_tasks`` with the same parameters and is compared to the
reported decimals: accuracies and F1 equal to 2 decimals, correlations and MSE within 1e-4 (STS: every
sub-dataset's Pearson and Spearman). Prints one row per (set, seed, task) and a summary; exit 1 on any
difference. The CI test ``tests/evaluation/test_senteval_reference.py`` runs a quick subset of the same check.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CORR_TOL = 1e-4


def differences(expected: dict, got: dict) -> list[str]:
    """The compared figures that differ, as ``name: SentEval vs ours``."""
    out = []
    if "acc" in expected:
        for key in ("acc", "devacc", "f1"):
            if key in expected and round(got[key], 2) != round(expected[key], 2):
                out.append(f"{key}: {expected[key]} vs {got[key]}")
    elif "pearson" in expected:
        for key in ("devpearson", "pearson", "spearman", "mse"):
            if abs(got[key] - expected[key]) > CORR_TOL:
                out.append(f"{key}: {expected[key]:.6f} vs {got[key]:.6f}")
    else:
        for subset, values in expected.items():
            if subset == "all" or not isinstance(values, dict) or "pearson" not in values:
                continue
            for key in ("pearson", "spearman"):
                ours = got[subset][key]
                ours = ours[0] if isinstance(ours, (list, tuple)) else ours
                if abs(ours - values[key][0]) > CORR_TOL:
                    out.append(f"{subset}.{key}: {values[key][0]:.6f} vs {ours:.6f}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.environ.get("SENTENCE_DATA") or str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--sets", default="prototype,full_subset", help="parameter sets of the file to check")
    ap.add_argument("--seeds", default=None, help="comma-separated seeds (default: every seed of the file)")
    ap.add_argument("--tasks", default=None, help="comma-separated tasks (default: every task of the file)")
    args = ap.parse_args(argv)
    data = Path(args.data)
    reference = json.loads((data.resolve().parent / "docs" / "senteval-reference-scores.json").read_text())

    from sentence_lab.evaluation.baselines import BowGloveEncoder
    from sentence_lab.evaluation.results import ResultsWriter
    from sentence_lab.evaluation.runner import load_tasks, params_from_config, run_tasks

    encoder = BowGloveEncoder()
    rows, bad = 0, 0
    print("| set | seed | task | SentEval | ours | equal | seconds |\n|---|---|---|---|---|---|---|")
    for set_name in args.sets.split(","):
        block = reference[set_name]
        name = "full" if set_name.startswith("full") else "prototype"
        for seed, expected_tasks in block["by_seed"].items():
            if args.seeds and seed not in args.seeds.split(","):
                continue
            tasks = [t for t in expected_tasks if not args.tasks or t in args.tasks.split(",")]
            params = params_from_config({**block["params"], "seed": int(seed), "name": name,
                                         "classifier": {"nhid": block["params"].get("nhid", 0)}})
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                doc = run_tasks(load_tasks(tasks, data), encoder, params, ResultsWriter(Path(tmp) / "r.json", {}))
                seconds = time.perf_counter() - t0
            for task in tasks:
                expected, got = expected_tasks[task], doc["results"].get(task)
                diff = ["missing"] if got is None else differences(expected, got)
                key = next((k for k in ("acc", "pearson") if k in expected), None)  # STS: per sub-dataset
                shown = (f"{expected[key]:.4g} | {got[key]:.4g}" if key and got else "per sub-dataset | per sub-dataset")
                print(f"| {set_name} | {seed} | {task} | {shown} | {'yes' if not diff else 'NO: ' + '; '.join(diff)} "
                      f"| {got.get('seconds', 0) if got else 0:.1f} |", flush=True)
                rows += 1
                bad += bool(diff)
            print(f"<!-- {set_name} seed {seed}: {seconds:.1f} s -->", flush=True)
    print(f"\n{rows - bad} of {rows} (set, seed, task) results equal SentEval's to the reported decimals")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
