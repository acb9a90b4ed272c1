"""Time and peak memory of the probing-task generator on a corpus, and how memory grows with corpus size.

Runs ``python -m sentence_lab.tools.probing_gen`` in a fresh process per case (so peak memory is that run's own),
on the first quarter, the first half and all of the corpus's documents, and prints per case: documents, words,
seconds per stage, words per second, peak RSS of the generator and of its worker processes, and the size of
the frequency tables. Streaming means the peak grows only with those tables, not with the words read.

    python benchmarks/probing_gen_speed.py [--corpus $SENTENCE_DATA/corpora/gutenberg] [--tasks surface|all]
                                           [--fractions 0.25,0.5,1] [--parse-sample 300000] [--workers 2]
                                           [--sizes 100000,10000,10000] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, resource, sys
sys.path.insert(0, {root!r})
from sentence_lab.tools.probing_gen.__main__ import parse_settings
from sentence_lab.tools.probing_gen.generate import generate
meta = generate(parse_settings({argv!r}))
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print("RESULT " + json.dumps({{"meta": meta, "peak_mb": own, "children_peak_mb": kids}}))
"""


def run_case(argv: list[str]) -> dict:
    code = CHILD.format(root=str(ROOT), argv=argv)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"generator failed:\n{proc.stderr[-2000:]}")
    line = next(l for l in proc.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def main() -> None:
    data = os.environ.get("SENTENCE_DATA", str(ROOT.parent / "shared" / "data"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(Path(data) / "corpora" / "gutenberg"))
    parser.add_argument("--tasks", default="surface", help="surface (no parser) or all")
    parser.add_argument("--fractions", default="0.25,0.5,1")
    parser.add_argument("--parse-sample", type=int, default=300000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sizes", default="100000,10000,10000", help="train,dev,test per task")
    parser.add_argument("--keep", default=None, help="write the last case's tasks here instead of a temp dir")
    args = parser.parse_args()
    train, dev, test = (int(x) for x in args.sizes.split(","))
    sys.path.insert(0, str(ROOT))
    from sentence_lab.tools.probing_gen.stream import corpus_documents

    n_docs = len(corpus_documents(args.corpus))
    print(f"corpus {args.corpus}: {n_docs} documents; tasks={args.tasks}; {os.cpu_count()} CPUs")
    header = (f"{'docs':>5} {'words':>11} {'total s':>8} {'pass1 s':>8} {'pass2 s':>7} {'parse s':>8} "
              f"{'words/s':>9} {'peak MB':>8} {'workers MB':>10} {'tables':>22}")
    print(header)
    for fraction in (float(f) for f in args.fractions.split(",")):
        docs = max(1, round(n_docs * fraction))
        with tempfile.TemporaryDirectory() as tmp:
            out = args.keep if args.keep and fraction == 1 else tmp
            argv = [f"corpus={args.corpus}", f"out={out}", f"max_documents={docs}", "progress=false",
                    f"workers={args.workers}", f"parse_sample={args.parse_sample}", f"train={train}",
                    f"dev={dev}", f"test={test}"]
            if args.tasks == "surface":
                argv += ["parser=none", "tasks=[Length,WordContent,BigramShift,CoordinationInversion]"]
            result = run_case(argv)
        meta = result["meta"]
        src, st = meta["source"], meta.get("stage_seconds", {})
        parse = st.get("parse_sample", 0) + st.get("parse_coordination", 0)
        tables = f"{src['vocabulary']} words"
        if src.get("bigram_table_bytes"):
            tables += f", bigrams {src['bigram_table_bytes'] / 2**20:.0f} MB"
        print(f"{docs:>5} {src['tokens']:>11,} {meta['seconds']:>8.1f} {st.get('pass1_tokenise_count', 0):>8.1f} "
              f"{st.get('pass2_sample', 0):>7.1f} {parse:>8.1f} {src['tokens'] / meta['seconds']:>9,.0f} "
              f"{result['peak_mb']:>8.0f} {result['children_peak_mb']:>10.0f} {tables:>22}")
        sizes = {task: entry["sizes"] for task, entry in meta["tasks"].items()}
        print("      sizes: " + "; ".join(f"{t} {s['tr']}/{s['va']}/{s['te']}" for t, s in sizes.items()))


if __name__ == "__main__":
    main()
