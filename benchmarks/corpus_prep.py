"""Preparing a corpus for training: wall time, tokens per second and the peak memory of the whole process tree, then
the start-up of a run on the prepared corpus.

    python benchmarks/corpus_prep.py                                  # SENTENCE_DATA's Gutenberg, x1, 1 and 2 workers
    python benchmarks/corpus_prep.py --copies 1,3,10 --workers 1,2    # the scale-up: a generated corpus per size
    python benchmarks/corpus_prep.py --corpus DIR [--ddp-steps 20] [--output PATH]   # + a 2-rank DDP run's peak
    python benchmarks/corpus_prep.py --smoke                          # a shipped book's start, in seconds

Each case runs ``load_corpus`` (what ``train.py`` runs on a cache miss) in a fresh process, with ``workers``
tokenising processes, into an empty cache; the parent samples the proportional set size (PSS: shared pages counted
once) of that process and its workers every 0.2 s and keeps the peak. ``--copies N`` makes a corpus of N copies of
the training books as new documents, where on every copy after the first a tenth of the word types carry a copy
suffix, so the vocabulary grows as a real corpus's does. After each case a second fresh process opens the prepared
corpus (a cache hit) and the seconds it takes are the start-up. Figures go to a JSON record (``--output``, default
``logs/benchmarks/corpus_prep/<time>.json``).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

from sentence_lab.text.documents import list_documents, read_document
from sentence_lab.tools import benchmark

ROOT = Path(__file__).resolve().parents[1]
WORD = re.compile(r"[A-Za-z]+")

CHILD = """
import json, sys, time
from sentence_lab.datamodules.corpus import CorpusSettings, load_corpus
t0 = time.perf_counter()
vocab, splits, hit = load_corpus({train!r}, {valid!r}, CorpusSettings(vocab_size=50000), {cache!r}, {workers})
seconds = time.perf_counter() - t0
print("RESULT " + json.dumps({{"seconds": seconds, "hit": hit, "tokens": int(len(splits["train"].word_ids)),
                              "sentences": len(splits["train"]), "vocabulary": len(vocab)}}))
"""


def tree_pss_mb(pid: int) -> float:
    """PSS of ``pid`` and its descendants, in MB (0 for processes that are gone)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total / 1024


def run_child(train: Path, valid: Path, cache: Path, workers: int) -> dict:
    code = CHILD.format(train=str(train), valid=str(valid), cache=str(cache), workers=workers)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    peak = 0.0
    while proc.poll() is None:
        peak = max(peak, tree_pss_mb(proc.pid))
        time.sleep(0.2)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"load_corpus failed:\n{err[-2000:]}")
    result = json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[len("RESULT "):])
    return {**result, "peak_pss_mb": peak}


def ddp_peak(corpus: Path, cache: Path, steps: int) -> dict:
    """Peak PSS of a 2-rank ``trainer=ddp_cpu`` run of the default model for ``steps`` steps on the prepared corpus
    (no evaluation suite, no logger), and its wall seconds."""
    with tempfile.TemporaryDirectory() as logs:
        cmd = [sys.executable, str(ROOT / "train.py"), "trainer=ddp_cpu", f"data.train_dir={corpus / 'train'}",
               f"data.valid_dir={corpus / 'valid'}", f"data.cache_dir={cache}", f"trainer.max_steps={steps}",
               "++trainer.limit_val_batches=2", "trainer.num_sanity_val_steps=0", "~callbacks.eval_suite",
               "logger=none", "test_after_fit=false", "print_config=false", "data.vocab_size=50000",
               f"paths.log_dir={logs}"]
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        peak = 0.0
        while proc.poll() is None:
            peak = max(peak, tree_pss_mb(proc.pid))
            time.sleep(0.2)
        err = proc.stderr.read()
        if proc.returncode != 0:
            raise SystemExit(f"the DDP run failed:\n{err[-2000:]}")
    return {"ddp_steps": steps, "ddp_peak_pss_mb": round(peak), "ddp_seconds": round(time.perf_counter() - started, 1)}


def make_copies(corpus: Path, copies: int, out: Path, share: float = 0.1) -> Path:
    """``copies`` copies of ``corpus/train`` (new documents) beside its ``valid``; on copy ``c >= 1`` the word types
    whose hash falls in ``share`` get the suffix ``q<c>``."""
    for c in range(copies):
        def suffix(match: re.Match) -> str:
            word = match.group(0)
            return f"{word}q{c}" if c and zlib.crc32(word.lower().encode()) % 1000 < share * 1000 else word

        for path in list_documents(corpus / "train"):
            target = out / "train" / f"copy{c:03d}" / path.name.removesuffix(".xz")
            target.parent.mkdir(parents=True, exist_ok=True)
            text = read_document(path)
            target.write_text(WORD.sub(suffix, text) if c else text, encoding="utf-8")
    shutil.copytree(corpus / "valid", out / "valid")
    return out


def main(argv: list[str] | None = None) -> int:
    data = os.environ.get("SENTENCE_DATA", str(ROOT.parent / "shared" / "data"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path(data) / "corpora" / "gutenberg",
                        help="a folder with train/ and valid/ documents")
    parser.add_argument("--copies", default="1", help="scale-ups to measure, e.g. 1,3,10 (1: the corpus itself)")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--ddp-steps", type=int, default=0,
                        help="also a 2-rank DDP run of this many steps on each prepared corpus: its peak PSS")
    benchmark.add_options(parser, "the start of one shipped book (assets/books), x2, one worker")
    args = parser.parse_args(argv)
    run = benchmark.start("corpus_prep", args, ROOT)
    cases = []
    print(f"{'copies':>6} {'workers':>7} {'tokens':>12} {'vocab':>9} {'seconds':>8} {'tokens/s':>9} "
          f"{'peak PSS MB':>11} {'start-up s':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        if args.smoke:
            args.corpus, args.copies, args.workers = Path(tmp) / "smoke", "2", "1"
            for split in ("train", "valid"):
                book = list_documents(ROOT / "assets" / "books" / split)[0]
                (args.corpus / split).mkdir(parents=True)
                (args.corpus / split / "book.txt").write_text(read_document(book)[:20000], encoding="utf-8")
        for copies in (int(c) for c in args.copies.split(",")):
            corpus = args.corpus if copies == 1 else make_copies(args.corpus, copies, Path(tmp) / f"x{copies}")
            for workers in (int(w) for w in args.workers.split(",")):
                cache = Path(tmp) / f"cache-{copies}-{workers}"
                built = run_child(corpus / "train", corpus / "valid", cache, workers)
                opened = run_child(corpus / "train", corpus / "valid", cache, workers)
                ddp = ddp_peak(corpus, cache, args.ddp_steps) if args.ddp_steps and workers == 1 else {}
                shutil.rmtree(cache)
                case = {"copies": copies, "workers": workers, "tokens": built["tokens"],
                        "vocabulary_types": built["vocabulary"], "seconds": round(built["seconds"], 2),
                        "tokens_per_second": round(built["tokens"] / built["seconds"]),
                        "peak_pss_mb": round(built["peak_pss_mb"]), "startup_seconds": round(opened["seconds"], 2),
                        "startup_peak_pss_mb": round(opened["peak_pss_mb"]), **ddp}
                cases.append(case)
                print(f"{copies:>6} {workers:>7} {case['tokens']:>12,} {case['vocabulary_types']:>9,} "
                      f"{case['seconds']:>8.1f} {case['tokens_per_second']:>9,} {case['peak_pss_mb']:>11,} "
                      f"{case['startup_seconds']:>10.2f}" + (f"  DDP x2, {ddp['ddp_steps']} steps: peak PSS "
                                                              f"{ddp['ddp_peak_pss_mb']:,} MB" if ddp else ""))
            if copies != 1:
                shutil.rmtree(corpus)
    run.write({"corpus": str(args.corpus), "cases": cases})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
