"""Preparing a corpus for training: wall time, tokens per second and the peak memory of the whole process tree, then
the start-up of a run on the prepared corpus.

    python benchmarks/corpus_prep.py                                  # SENTENCE_DATA's Gutenberg, x1, 1 and 2 workers
    python benchmarks/corpus_prep.py --copies 1,3,10 --workers 1,2    # the scale-up: a generated corpus per size
    python benchmarks/corpus_prep.py --corpus DIR [--ddp-steps 20] [--train-startup] [--output PATH]   # + train.py
    python benchmarks/corpus_prep.py --tokenizer-books 40 --copies 0   # only the tokenizer: pieces vs whole text
    python benchmarks/corpus_prep.py --smoke                          # a shipped book's start, in seconds

Each case runs ``load_corpus`` (what ``train.py`` runs on a cache miss) in a fresh process, with ``workers``
tokenising processes, into an empty cache; the parent samples the proportional set size (PSS: shared pages counted
once) of that process and its workers every 0.2 s and keeps the peak. ``--copies N`` makes a corpus of N copies of
the training books as new documents, where on every copy after the first a tenth of the word types carry a copy
suffix, so the vocabulary grows as a real corpus's does. After each case a second fresh process opens the prepared
corpus (a cache hit) and the seconds it takes are the start-up; ``--train-startup`` also times a whole ``train.py``
run of one step on it (imports, opening the corpus, building the model, one step, the checkpoint), and
``--ddp-steps`` a 2-rank DDP run's peak memory. ``--tokenizer-books N`` first times, in this process
and side by side, the Treebank tokenizer a remembered piece at a time (``treebank_tokens``, what preparation runs)
against the Treebank over each whole sentence (``reference_tokens``, its definition) on the lowercased sentences of
every ``len/N``-th training book: five alternating rounds, the median tokens/s of each and their ratio (the pieces'
memory starts empty in each round). Figures go to a JSON record (``--output``, default
``logs/benchmarks/corpus_prep/<time>.json``).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

from lib import records
from sentence_lab.text.documents import list_documents, read_document, split_sentences
from sentence_lab.text.treebank import forget_pieces, reference_tokens, treebank_tokens

ROOT = Path(__file__).resolve().parents[1]
WORD = re.compile(r"[A-Za-z]+")

CHILD = """
import json, sys, time
from sentence_lab.datamodules.corpus import CorpusSettings, load_corpus
t0 = time.perf_counter()
vocab, splits, hit = load_corpus({train!r}, {valid!r}, CorpusSettings(vocab_size=50000), {cache!r}, {workers})
seconds = time.perf_counter() - t0
folder = splits["train"].source[0]
types = json.load(open(folder + "/manifest.json"))["words"]
print("RESULT " + json.dumps({{"seconds": seconds, "hit": hit, "tokens": int(len(splits["train"].word_ids)),
                              "sentences": len(splits["train"]), "vocabulary": len(vocab), "types": types}}))
"""


def tree_pss_mb(pid: int) -> tuple[float, float]:
    """PSS of ``pid`` and its descendants, and the anonymous part of it (what the processes hold themselves, not
    pages of files they map), in MB (0 for processes that are gone)."""
    totals, todo = {"Pss:": 0, "Pss_Anon:": 0}, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                field = line.split(maxsplit=1)[0]
                if field in totals:
                    totals[field] += int(line.split()[1])
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return totals["Pss:"] / 1024, totals["Pss_Anon:"] / 1024


def watch(proc: subprocess.Popen) -> tuple[float, float]:
    """Peak PSS and peak anonymous PSS of ``proc``'s tree, sampled every 0.2 s until it ends."""
    peak = anon = 0.0
    while proc.poll() is None:
        now, now_anon = tree_pss_mb(proc.pid)
        peak, anon = max(peak, now), max(anon, now_anon)
        time.sleep(0.2)
    return peak, anon


def run_child(train: Path, valid: Path, cache: Path, workers: int) -> dict:
    code = CHILD.format(train=str(train), valid=str(valid), cache=str(cache), workers=workers)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    peak, anon = watch(proc)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"load_corpus failed:\n{err[-2000:]}")
    result = json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[len("RESULT "):])
    return {**result, "peak_pss_mb": peak, "peak_anon_pss_mb": anon}


def train_run(corpus: Path, cache: Path, steps: int, ddp: bool) -> dict:
    """Wall seconds and peak PSS of ``train.py`` (the default model, no evaluation suite, no logger, no test) for
    ``steps`` steps on the prepared corpus: one process, or two ``trainer=ddp_cpu`` ranks."""
    with tempfile.TemporaryDirectory() as logs:
        cmd = [sys.executable, str(ROOT / "train.py"), f"data.train_dir={corpus / 'train'}",
               f"data.valid_dir={corpus / 'valid'}", f"data.cache_dir={cache}", f"trainer.max_steps={steps}",
               "++trainer.limit_val_batches=2", "trainer.num_sanity_val_steps=0", "~callbacks.eval_suite",
               "logger=none", "test_after_fit=false", "print_config=false", "data.vocab_size=50000",
               f"paths.log_dir={logs}"] + (["trainer=ddp_cpu"] if ddp else [])
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        peak, _ = watch(proc)
        seconds = time.perf_counter() - started
        assert proc.stderr is not None  # stderr=PIPE
        err = proc.stderr.read()
        if proc.returncode != 0:
            raise SystemExit(f"train.py failed:\n{err[-2000:]}")
        hit = any("Opened the prepared corpus" in log.read_text(errors="replace")
                  for log in Path(logs).rglob("train.log"))
    return {"steps": steps, "peak_pss_mb": round(peak), "seconds": round(seconds, 1), "prepared_corpus_opened": hit}


def make_copies(corpus: Path, copies: int, out: Path, share: float = 0.1) -> Path:
    """``copies`` copies of ``corpus/train`` (new documents) beside its ``valid``; on copy ``c >= 1`` the word types
    whose hash falls in ``share`` get the suffix ``q<c>``."""
    for c in range(copies):
        def suffix(match: re.Match, c: int = c) -> str:
            word = match.group(0)
            return f"{word}q{c}" if c and zlib.crc32(word.lower().encode()) % 1000 < share * 1000 else word

        for path in list_documents(corpus / "train"):
            target = out / "train" / f"copy{c:03d}" / path.name.removesuffix(".xz")
            target.parent.mkdir(parents=True, exist_ok=True)
            text = read_document(path)
            target.write_text(WORD.sub(suffix, text) if c else text, encoding="utf-8")
    shutil.copytree(corpus / "valid", out / "valid")
    return out


def tokenizer_speed(books: list[Path], rounds: int = 5) -> dict:
    """Tokens/s of ``treebank_tokens`` and ``reference_tokens`` on the same sentences, rounds alternating."""
    sentences = [s.lower() for book in books for s in split_sentences(read_document(book))]
    timings: dict[str, list[float]] = {"pieces": [], "whole_text": []}
    tokens = 0
    for _ in range(rounds):
        for name, tokenize in (("pieces", treebank_tokens), ("whole_text", reference_tokens)):
            if name == "pieces":
                forget_pieces()
            started = time.perf_counter()
            tokens = sum(len(tokenize(s)) for s in sentences)
            timings[name].append(tokens / (time.perf_counter() - started))
    medians = {name: statistics.median(values) for name, values in timings.items()}
    return {"books": len(books), "sentences": len(sentences), "tokens": tokens, "rounds": rounds,
            "tokens_per_second": {name: round(v) for name, v in medians.items()},
            "ratio": round(medians["pieces"] / medians["whole_text"], 2)}


def main(argv: list[str] | None = None) -> int:
    data = os.environ.get("SENTENCE_DATA", str(ROOT.parent / "shared" / "data"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path(data) / "corpora" / "gutenberg",
                        help="a folder with train/ and valid/ documents")
    parser.add_argument("--copies", default="1", help="scale-ups to measure, e.g. 1,3,10 (1: the corpus itself)")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--ddp-steps", type=int, default=0,
                        help="also a 2-rank DDP run of this many steps on each prepared corpus: its peak PSS")
    parser.add_argument("--train-startup", action="store_true",
                        help="also time train.py to the end of its first step on each prepared corpus")
    parser.add_argument("--tokenizer-books", type=int, default=0,
                        help="first, the tokenizer alone on this many training books, pieces vs whole text")
    records.add_options(parser, "the start of one shipped book (assets/books), x2, one worker")
    args = parser.parse_args(argv)
    run = records.start("corpus_prep", args, ROOT)
    cases = []
    speed = {}
    print(f"{'copies':>6} {'workers':>7} {'tokens':>12} {'types':>9} {'seconds':>8} {'tokens/s':>9} "
          f"{'peak PSS MB':>11} {'of it anon':>10} {'start-up s':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        if args.smoke:
            args.corpus, args.copies, args.workers = Path(tmp) / "smoke", "2", "1"
            for split in ("train", "valid"):
                book = list_documents(ROOT / "assets" / "books" / split)[0]
                (args.corpus / split).mkdir(parents=True)
                (args.corpus / split / "book.txt").write_text(read_document(book)[:20000], encoding="utf-8")
        if args.tokenizer_books or args.smoke:
            books = list_documents(args.corpus / "train")
            books = books[:: max(1, len(books) // max(args.tokenizer_books, 1))][: max(args.tokenizer_books, 1)]
            speed = tokenizer_speed(books, rounds=1 if args.smoke else 5)
            print(f"tokenizer on {speed['books']} books ({speed['tokens']:,} tokens), median of {speed['rounds']} "
                  f"rounds: pieces {speed['tokens_per_second']['pieces']:,} tokens/s, whole text "
                  f"{speed['tokens_per_second']['whole_text']:,} tokens/s, {speed['ratio']}x")
        for copies in (int(c) for c in args.copies.split(",") if int(c) > 0):
            corpus = args.corpus if copies == 1 else make_copies(args.corpus, copies, Path(tmp) / f"x{copies}")
            for workers in (int(w) for w in args.workers.split(",")):
                cache = Path(tmp) / f"cache-{copies}-{workers}"
                built = run_child(corpus / "train", corpus / "valid", cache, workers)
                opened = run_child(corpus / "train", corpus / "valid", cache, workers)
                ddp, startup = {}, {}
                if args.ddp_steps and workers == 1:
                    run_ddp = train_run(corpus, cache, args.ddp_steps, ddp=True)
                    ddp = {"ddp_steps": args.ddp_steps, "ddp_peak_pss_mb": run_ddp["peak_pss_mb"],
                           "ddp_seconds": run_ddp["seconds"]}
                if args.train_startup and workers == 1:
                    one_step = train_run(corpus, cache, 1, ddp=False)
                    startup = {"train_py_one_step_seconds": one_step["seconds"],
                               "train_py_opened_the_prepared_corpus": one_step["prepared_corpus_opened"],
                               "train_py_one_step_peak_pss_mb": one_step["peak_pss_mb"]}
                shutil.rmtree(cache)
                case = {"copies": copies, "workers": workers, "tokens": built["tokens"],
                        "vocabulary": built["vocabulary"], "word_types": built["types"],
                        "seconds": round(built["seconds"], 2),
                        "tokens_per_second": round(built["tokens"] / built["seconds"]),
                        "peak_pss_mb": round(built["peak_pss_mb"]),
                        "peak_anon_pss_mb": round(built["peak_anon_pss_mb"]),
                        "startup_seconds": round(opened["seconds"], 2),
                        "startup_peak_pss_mb": round(opened["peak_pss_mb"]), **ddp, **startup}
                cases.append(case)
                print(f"{copies:>6} {workers:>7} {case['tokens']:>12,} {case['word_types']:>9,} "
                      f"{case['seconds']:>8.1f} {case['tokens_per_second']:>9,} {case['peak_pss_mb']:>11,} "
                      f"{case['peak_anon_pss_mb']:>10,} "
                      f"{case['startup_seconds']:>10.2f}" + (f"  DDP x2, {ddp['ddp_steps']} steps: peak PSS "
                                                              f"{ddp['ddp_peak_pss_mb']:,} MB" if ddp else "")
                      + (f"  train.py to its first step: {startup['train_py_one_step_seconds']} s (prepared corpus "
                         f"{'opened' if startup['train_py_opened_the_prepared_corpus'] else 'NOT opened'})"
                         if startup else ""))
            if copies != 1:
                shutil.rmtree(corpus)
    run.write({"corpus": str(args.corpus), "cases": cases, "tokenizer": speed})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
