"""Time and peak memory of the probing-task generator on a corpus, and how memory grows with corpus size.

    python benchmarks/probing_gen_speed.py --tasks all       # the results page's figures (SENTENCE_DATA's Gutenberg)
    python benchmarks/probing_gen_speed.py [--corpus $SENTENCE_DATA/corpora/gutenberg] [--tasks surface|all]
                                           [--fractions 0.25,0.5,1] [--parse-sample 300000] [--workers 2]
                                           [--sizes 100000,10000,10000] [--keep DIR] [--output PATH]
    python benchmarks/probing_gen_speed.py --smoke           # surface tasks from one shipped book, in seconds

Runs ``python -m sentence_lab.probing_gen`` in a fresh process per case (so peak memory is that run's own),
on the first quarter, the first half and all of the corpus's documents, and prints per case: documents, words,
seconds per stage, words per second, peak RSS of the generator and of its worker processes, and the size of
the frequency tables. Streaming means the peak grows only with those tables, not with the words read. The figures
go to a JSON record (``--output``, default ``logs/benchmarks/probing_gen_speed/<time>.json``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from lib import records

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, resource
from sentence_lab.probing_gen.__main__ import parse_settings
from sentence_lab.probing_gen.generate import generate
meta = generate(parse_settings({argv!r}))
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print("RESULT " + json.dumps({{"meta": meta, "peak_mb": own, "children_peak_mb": kids}}))
"""


def run_case(argv: list[str]) -> dict:
    code = CHILD.format(argv=argv)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"generator failed:\n{proc.stderr[-2000:]}")
    line = next(row for row in proc.stdout.splitlines() if row.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def main(argv: list[str] | None = None) -> int:
    data = os.environ.get("SENTENCE_DATA", str(ROOT.parent / "shared" / "data"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(Path(data) / "corpora" / "gutenberg"))
    parser.add_argument("--tasks", default="surface", help="surface (no parser) or all")
    parser.add_argument("--fractions", default="0.25,0.5,1")
    parser.add_argument("--parse-sample", type=int, default=300000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sizes", default="100000,10000,10000", help="train,dev,test per task")
    parser.add_argument("--keep", default=None, help="write the last case's tasks here instead of a temp dir")
    records.add_options(parser, "the surface tasks (40/10/10 sentences) from the first shipped book "
                                  "(assets/books/train), one worker")
    args = parser.parse_args(argv)
    run = records.start("probing_gen_speed", args, ROOT)
    smoke_settings: list[str] = []
    if args.smoke:
        args.corpus, args.tasks, args.sizes, args.workers = str(ROOT / "assets" / "books" / "train"), "surface", \
            "40,10,10", 1
        smoke_settings = ["wc_rank_start=100", "wc_words=10"]  # one book, 40/10/10 sentences: ten words
    train, dev, test = (int(x) for x in args.sizes.split(","))
    from sentence_lab.probing_gen.stream import corpus_documents

    n_docs = len(corpus_documents(args.corpus))
    fractions = [1 / n_docs] if args.smoke else [float(f) for f in args.fractions.split(",")]
    print(f"corpus {args.corpus}: {n_docs} documents; tasks={args.tasks}; {os.cpu_count()} CPUs")
    header = (f"{'docs':>5} {'words':>11} {'total s':>8} {'pass1 s':>8} {'pass2 s':>7} {'parse s':>8} "
              f"{'words/s':>9} {'peak MB':>8} {'workers MB':>10} {'tables':>22}")
    print(header)
    cases = []
    for fraction in fractions:
        docs = max(1, round(n_docs * fraction))
        with tempfile.TemporaryDirectory() as tmp:
            out = args.keep if args.keep and fraction == 1 else tmp
            argv = [f"corpus={args.corpus}", f"out={out}", f"max_documents={docs}", "progress=false",
                    f"workers={args.workers}", f"parse_sample={args.parse_sample}", f"train={train}",
                    f"dev={dev}", f"test={test}", *smoke_settings]
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
        cases.append({"documents": docs, "words": src["tokens"], "seconds": meta["seconds"], "stage_seconds": st,
                      "words_per_second": src["tokens"] / meta["seconds"], "peak_mb": result["peak_mb"],
                      "children_peak_mb": result["children_peak_mb"], "vocabulary": src["vocabulary"],
                      "bigram_table_bytes": src.get("bigram_table_bytes"), "sizes": sizes})
    run.write({"corpus": args.corpus, "corpus_documents": n_docs, "tasks": args.tasks, "workers": args.workers,
               "parse_sample": args.parse_sample, "requested_sizes": [train, dev, test], "cases": cases},
              libraries=("spacy",))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
