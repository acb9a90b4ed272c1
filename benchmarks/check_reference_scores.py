"""Our engine against SentEval's own outputs, every task and seed of ``senteval-reference-scores.json``.

    SENTENCE_DATA=../shared/data python benchmarks/check_reference_scores.py
    SENTENCE_DATA=../shared/data python benchmarks/check_reference_scores.py --sets prototype --seeds 1111
    python benchmarks/check_reference_scores.py --smoke     # the same check on a tiny generated tree, no data needed

The file (``tests/reference/senteval-reference-scores.json``, a copy of the team's shared one) holds SentEval's
results (facebookresearch/SentEval 5d6dc11) for ``bow_glove`` under the prototype parameter set (5 seeds) and a
subset under the full set. Each
(task, seed) runs through ``evaluation.suite.EvaluationSuite`` with the same parameters and is compared to the
reported decimals: accuracies and F1 equal to 2 decimals, correlations and MSE within 1e-4 (STS: every
sub-dataset's Pearson and Spearman). Prints one row per (set, seed, task) and a summary, and writes them to a JSON
record (``--output``, default ``logs/benchmarks/check_reference_scores/<time>.json``); exit 1 on any difference.
The CI test ``tests/evaluation/test_senteval_reference.py`` runs a quick subset of the same check.

``--smoke`` has no SentEval outputs to compare with: on a tiny generated SentEval tree (TREC, SST2, STS12) it
writes a reference file in the same layout from a first pass of our engine, then runs the check against it (the
same seed must give the same scores to the reported decimals).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lib import records, smoke_inputs
from sentence_lab.evaluation.encoders.baselines import BowGloveEncoder
from sentence_lab.evaluation.runner import params_from_config
from sentence_lab.evaluation.suite import EvaluationSuite

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "tests" / "reference" / "senteval-reference-scores.json"
CORR_TOL = 1e-4
SMOKE_TASKS = ["TREC", "SST2", "STS12"]
PROTOTYPE = {"kfold": 5, "optim": "rmsprop", "batch_size": 128, "tenacity": 3, "epoch_size": 2, "nhid": 0}


def differences(expected: dict, got: Mapping[str, Any]) -> list[str]:
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


def smoke_reference(folder: Path, encoder) -> Path:
    """A tiny SentEval tree under ``folder/data`` and, beside it, a reference file in SentEval's layout whose
    figures are a first pass of our engine on it (prototype set, seed 1111). Returns the data root."""
    data = smoke_inputs.tiny_senteval(folder / "data")
    params = params_from_config({**PROTOTYPE, "seed": 1111, "name": "prototype", "classifier": {"nhid": 0}})
    doc = EvaluationSuite(SMOKE_TASKS, data, params).run(encoder, folder / "first_pass.json", on_existing="overwrite")
    results: Mapping[str, Mapping[str, Any]] = doc["results"]  # read by SentEval's keys, which TaskResult does not name
    expected: dict[str, dict] = {}
    for task, got in results.items():
        if "acc" in got:
            expected[task] = {k: round(got[k], 2) for k in ("devacc", "acc", "f1") if k in got}
        else:  # STS: SentEval's [statistic, p-value] per sub-dataset
            first = lambda v: v[0] if isinstance(v, (list, tuple)) else v  # noqa: E731
            expected[task] = {subset: {k: [first(values[k]), 0.0] for k in ("pearson", "spearman")}
                              for subset, values in got.items() if isinstance(values, dict) and "pearson" in values
                              and subset not in ("all", "pooled")}
    reference = {"what": "smoke: a first pass of our engine on a tiny generated tree (no SentEval outputs)",
                 "prototype": {"params": PROTOTYPE, "by_seed": {"1111": expected}}}
    (folder / "docs").mkdir()
    (folder / "docs" / "senteval-reference-scores.json").write_text(json.dumps(reference, indent=1))
    return data


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.environ.get("SENTENCE_DATA") or str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--reference", default=str(REFERENCE), help="SentEval's outputs (default: the shipped copy)")
    ap.add_argument("--sets", default="prototype,full_subset", help="parameter sets of the file to check")
    ap.add_argument("--seeds", default=None, help="comma-separated seeds (default: every seed of the file)")
    ap.add_argument("--tasks", default=None, help="comma-separated tasks (default: every task of the file)")
    records.add_options(ap, f"tasks {','.join(SMOKE_TASKS)} of a tiny generated tree, checked against a first pass "
                              "of our engine written in the reference file's layout")
    args = ap.parse_args(argv)
    run = records.start("check_reference_scores", args, ROOT)
    encoder = BowGloveEncoder()
    with tempfile.TemporaryDirectory(prefix="check_reference_") as tmp:
        if args.smoke:
            args.data, args.sets = str(smoke_reference(Path(tmp), encoder)), "prototype"
            args.reference = str(Path(tmp) / "docs" / "senteval-reference-scores.json")
        return check(args, encoder, run)


def check(args: argparse.Namespace, encoder, run: records.Run) -> int:
    data = Path(args.data)
    reference = json.loads(Path(args.reference).read_text())

    rows, bad, records = 0, 0, []
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
                doc = EvaluationSuite(tasks, data, params).run(encoder, Path(tmp) / "r.json", on_existing="overwrite")
                seconds = time.perf_counter() - t0
            results: Mapping[str, Mapping[str, Any]] = doc["results"]  # read by SentEval's keys, as above
            for task in tasks:
                expected, got = expected_tasks[task], results.get(task)
                diff = ["missing"] if got is None else differences(expected, got)
                key = next((k for k in ("acc", "pearson") if k in expected), None)  # STS: per sub-dataset
                shown = (f"{expected[key]:.4g} | {got[key]:.4g}" if key and got
                         else "per sub-dataset | per sub-dataset")
                print(f"| {set_name} | {seed} | {task} | {shown} | {'yes' if not diff else 'NO: ' + '; '.join(diff)} "
                      f"| {got.get('seconds', 0) if got else 0:.1f} |", flush=True)
                records.append({"set": set_name, "seed": seed, "task": task, "metric": key,
                                "senteval": expected.get(key) if key else None,
                                "ours": got.get(key) if key and got else None, "equal": not diff,
                                "differences": diff, "seconds": got.get("seconds") if got else None})
                rows += 1
                bad += bool(diff)
            print(f"<!-- {set_name} seed {seed}: {seconds:.1f} s -->", flush=True)
    print(f"\n{rows - bad} of {rows} (set, seed, task) results equal SentEval's to the reported decimals")
    run.write({"reference_file": str(args.reference), "compared": rows, "equal": rows - bad, "rows": records},
              data=str(data))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
