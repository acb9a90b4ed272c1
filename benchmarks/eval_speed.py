"""Time the SentEval suite: encoding vs classifier seconds per task, both parameter sets.

    SENTENCE_DATA=../shared/data python benchmarks/eval_speed.py                       # all tasks, both sets
    SENTENCE_DATA=../shared/data python benchmarks/eval_speed.py --tasks MR,STS14 --params prototype
    python benchmarks/eval_speed.py --encoders bow_glove --out-dir /tmp/eval_speed
    SENTENCE_DATA=../shared/data python benchmarks/eval_speed.py --high-dim --params prototype \
        [--reference /tmp/senteval_ref] [--tasks MR,TREC]      # the probes of a 4096-d encoder alone

Encoders: ``bow_glove`` and an untrained 4096-d ``bilstm_max`` (encoder.hidden_dim=2048). Each
(encoder, parameter set) runs ``evaluate.py`` in a subprocess and the per-task timings are read
back from its results JSON (``encode_seconds`` is time inside the encoder, ``classifier_seconds``
the rest: features, classifiers, correlations).

``--high-dim`` times the classifiers of a 4096-d encoder whose encoding costs nothing (a fixed random
projection), with bytes, FLOPs, the share of this CPU's roofline, the share of a 4096-d BiLSTM-max's encoding
time and, given ``--reference``, SentEval's own code on the same vectors (``benchmarks/highdim_probes.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENCODERS = {
    "bow_glove": ["encoder=bow_glove"],
    "bilstm_max_4096": ["encoder=bilstm_max", "encoder.hidden_dim=2048"],
}


def run_one(encoder: str, params: str, tasks: str, out_dir: Path) -> dict:
    results = out_dir / f"{encoder}_{params}.json"
    cmd = [sys.executable, str(ROOT / "evaluate.py"), *ENCODERS[encoder], f"evaluation={params}",
           f"tasks=[{tasks}]", f"results_file={results}"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if not results.is_file():
        raise SystemExit(f"{encoder}/{params} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    doc = json.loads(results.read_text())
    doc["wall_seconds"] = wall
    return doc


def report(encoder: str, params: str, doc: dict) -> None:
    print(f"\n## {encoder}, evaluation={params}: wall {doc['wall_seconds']:.1f}s, "
          f"{doc.get('sentences_encoded', '?')} distinct sentences encoded in {doc.get('encode_seconds', 0):.1f}s")
    print("| task | encode s | classifier s | total s | main score |")
    print("|---|---|---|---|---|")
    tot = [0.0, 0.0, 0.0]
    for task, r in doc["results"].items():
        score = r.get("main_score")
        print(f"| {task} | {r['encode_seconds']:.1f} | {r['classifier_seconds']:.1f} | {r['seconds']:.1f} | "
              f"{'n/a' if score is None else round(score, 4)} |")
        tot = [tot[0] + r["encode_seconds"], tot[1] + r["classifier_seconds"], tot[2] + r["seconds"]]
    print(f"| **sum** | {tot[0]:.1f} | {tot[1]:.1f} | {tot[2]:.1f} | |")
    for task, message in {**doc.get("skipped", {}), **doc.get("errors", {})}.items():
        print(f"  {task}: {message}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default="all", help="comma-separated tasks or groups (default: all)")
    ap.add_argument("--params", default="prototype,full", help="parameter sets (default: prototype,full)")
    ap.add_argument("--encoders", default=",".join(ENCODERS), help=f"subset of {list(ENCODERS)}")
    ap.add_argument("--out-dir", default=None, help="where the results JSON files go (default: a temporary folder)")
    ap.add_argument("--high-dim", action="store_true", help="time the probes of a 4096-d encoder alone")
    ap.add_argument("--reference", default=None, help="--high-dim: folder with SentEval's senteval/ package")
    ap.add_argument("--encode-sample", type=int, default=256,
                    help="--high-dim: sentences per task to time the 4096-d BiLSTM-max on (0: skip)")
    args = ap.parse_args()
    if args.high_dim:
        from highdim_probes import DEFAULT_TASKS, main as high_dim

        out = None
        if args.out_dir:
            Path(args.out_dir).mkdir(parents=True, exist_ok=True)
            out = Path(args.out_dir) / "high_dim.json"
        for params in args.params.split(","):
            high_dim(DEFAULT_TASKS if args.tasks == "all" else args.tasks, params,
                     Path(os.environ.get("SENTENCE_DATA") or ROOT / "data"), args.reference, args.encode_sample, out)
        return
    if not os.environ.get("SENTENCE_DATA"):
        print("note: SENTENCE_DATA is unset; evaluate.py falls back to <project>/data", file=sys.stderr)
    out_dir = Path(args.out_dir or tempfile.mkdtemp(prefix="eval_speed_"))
    out_dir.mkdir(parents=True, exist_ok=True)
    for encoder in args.encoders.split(","):
        for params in args.params.split(","):
            report(encoder, params, run_one(encoder, params, args.tasks, out_dir))
    print(f"\nresults JSON: {out_dir}")


if __name__ == "__main__":
    main()
