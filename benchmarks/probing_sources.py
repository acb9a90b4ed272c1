"""What a sentence's source tells the labels of a generated probing set: balanced over the corpus only
(``balance_by=none``, the generator before version 3) against balanced within each source (``group``).

    python benchmarks/probing_sources.py      # the results page's figures: the French side of newstest and Multi30k
    python benchmarks/probing_sources.py [--corpus $SENTENCE_DATA/parallel] [--language fr] [--files '**/*.fr*']
                                         [--corpus-format lines] [--wc-words 100] [--levels none,group]
                                         [--keep DIR] [--output PATH]
    python benchmarks/probing_sources.py --smoke   # two made-up sources of short and long lines, surface tasks

Generates the set once per level (``python -m sentence_lab.probing_gen``), then prints per task and level: the
training size, the source-only baseline (the label predicted from the sentence's group alone; and from its
document), the set's floors (majority, Length, NB-uni-tfidf, NB-bi-tfidf), and NB-uni-tfidf trained on one level's
training split and tested on the other level's test sentences that are not in that training split: a probe that
learnt the source scores well on its own test split and falls on the other. The figures go to a JSON record
(``--output``, default ``logs/benchmarks/probing_sources/<time>.json``).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
from pathlib import Path

from lib import records
from sentence_lab.evaluation.encoders.nb_baselines import nb_tfidf_split
from sentence_lab.probing_gen.__main__ import parse_settings
from sentence_lab.probing_gen.generate import generate
from sentence_lab.tasks.probing import senteval_layout_splits
from sentence_lab.text.documents import read_document

ROOT = Path(__file__).resolve().parents[1]
Rows = dict[str, list[tuple[str, str]]]  # split -> (sentence, label)


def read_rows(path: Path) -> Rows:
    """A generated task file, as the evaluation reads it, per split (tr, va, te): (sentence, label)."""
    splits = senteval_layout_splits(path)
    return {tag: list(zip(splits[name][0], splits[name][1])) for tag, name in (("tr", "train"), ("va", "dev"),
                                                                              ("te", "test"))}


def cross_nb(train: Rows, test: Rows) -> tuple[float | None, int]:
    """NB-uni-tfidf trained on ``train``'s training split (alpha on its dev split), tested on ``test``'s test
    sentences that ``train`` does not train on; None when none is left."""
    seen = {s for s, _ in train["tr"]}
    held = [(s, y) for s, y in test["te"] if s not in seen]
    if not held or len({y for _, y in train["tr"]}) < 2:
        return None, len(held)
    _, acc, _ = nb_tfidf_split(1, [s for s, _ in train["tr"]], [y for _, y in train["tr"]],
                               [s for s, _ in train["va"]], [y for _, y in train["va"]],
                               [s for s, _ in held], [y for _, y in held])
    return round(acc, 2), len(held)


def smoke_corpus(folder: Path) -> Path:
    """Two sources of lines of a shipped book's words: mostly short ones in one folder, mostly long ones in the
    other, so the source tells the length bin until the generator balances within sources."""
    book = sorted((ROOT / "assets" / "books" / "train").glob("*.txt.xz"))[0]
    words = read_document(book).split()[:20000]
    rng = random.Random(0)
    for name, short in (("captions", 0.8), ("news", 0.2)):  # the share of 4-11-word lines; the others 12-27
        (folder / name).mkdir(parents=True)
        sentences = [" ".join(rng.choices(words, k=rng.randint(4, 11) if rng.random() < short else
                                          rng.randint(12, 27))) + " ." for _ in range(3000)]
        (folder / name / "part.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    return folder


def main(argv: list[str] | None = None) -> int:
    data = os.environ.get("SENTENCE_DATA", str(ROOT.parent / "shared" / "data"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(Path(data) / "parallel"))
    parser.add_argument("--language", default="fr")
    parser.add_argument("--files", default="**/*.fr*")
    parser.add_argument("--corpus-format", default="lines")
    parser.add_argument("--wc-words", type=int, default=100)
    parser.add_argument("--levels", default="none,group")
    parser.add_argument("--keep", default=None, help="write each level's set under DIR/<level> (and reuse it)")
    records.add_options(parser, "two made-up sources of short and long lines, the surface tasks, 300/60/60")
    args = parser.parse_args(argv)
    run = records.start("probing_sources", args, ROOT)
    levels = args.levels.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        extra = []
        if args.smoke:
            args.corpus, args.language, args.files = str(smoke_corpus(Path(tmp) / "corpus")), "en", "**/*.txt"
            extra = ["parser=none", "tasks=[Length,BigramShift]", "train=300", "dev=60", "test=60"]
        keep = Path(args.keep) if args.keep else Path(tmp) / "sets"
        metas, rows = {}, {}
        for level in levels:
            out = keep / level
            if not (out / "meta.json").is_file() or "seconds" not in json.loads((out / "meta.json").read_text()):
                generate(parse_settings([f"corpus={args.corpus}", f"out={out}", f"language={args.language}",
                                         f"corpus_format={args.corpus_format}", f"files={args.files}",
                                         f"wc_words={args.wc_words}", f"balance_by={level}", "progress=false",
                                         *extra]))
            metas[level] = json.loads((out / "meta.json").read_text())
            rows[level] = {task: read_rows(out / entry["file"]) for task, entry in metas[level]["tasks"].items()}
        results: dict[str, dict] = {}
        print(f"{'task':<22} {'level':<6} {'train':>6} {'source: group':>13} {'document':>9} {'majority':>9} "
              f"{'Length':>7} {'NB-uni':>7} {'NB-bi':>7}  NB-uni trained here, tested on each level's test split")
        for task in metas[levels[0]]["tasks"]:
            for level in levels:
                entry = metas[level]["tasks"].get(task)
                if entry is None:
                    continue
                cross = {other: cross_nb(rows[level][task], rows[other][task]) for other in levels
                         if task in rows[other]}
                base, floors = entry.get("source_baseline", {}), entry.get("floors", {})
                results.setdefault(task, {})[level] = {
                    "train": entry["sizes"]["tr"], "source_baseline": base, "floors": floors,
                    "balance": entry.get("balance"), "nb_uni_on_test_of": {o: {"acc": a, "n": n}
                                                                          for o, (a, n) in cross.items()}}
                crossed = "  ".join(f"{o} {a if a is not None else '-'} (n={n})" for o, (a, n) in cross.items())
                print(f"{task:<22} {level:<6} {entry['sizes']['tr']:>6} {base.get('group', '-'):>13} "
                      f"{base.get('document', '-'):>9} {floors.get('majority', '-'):>9} {floors.get('length', '-'):>7} "
                      f"{floors.get('nb_uni_tfidf', '-'):>7} {floors.get('nb_bi_tfidf', '-'):>7}  {crossed}")
    run.write({"corpus": args.corpus, "language": args.language, "levels": levels, "tasks": results,
               "groups": metas[levels[-1]]["source"].get("sources")})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
