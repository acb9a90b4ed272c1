"""Readers of sentence-pair files: each yields ``(a, b, label)`` with ``label`` a string or None.

A split is a mapping ``{format: <name>, path: ..., **options}``; ``read_pairs`` dispatches on ``format``:

- ``tsv``: tab-separated columns ``a``, ``b`` (indices), optional ``label`` (with ``label_names`` when it
  is written as an index, as XNLI's), ``header``, and ``min_score`` with ``score`` (keep rows whose score
  column is at least that: PPDB 2.0's human ratings);
- ``csv``: columns named ``a``, ``b``, ``label`` (MultiNLI dev as shipped here);
- ``jsonl``: SNLI/MultiNLI releases (``sentence1``, ``sentence2``, ``gold_label``);
- ``infersent``: InferSent's ``s1.<split>``, ``s2.<split>``, ``labels.<split>`` under ``path``;
- ``sick``: SICK's ``sentence_A``, ``sentence_B``, ``entailment_judgment`` (``SICK_train.txt``, ...);
- ``aligned``: two line-aligned files ``path`` (side a) and ``target_path`` (side b), gzipped or not
  (Multi30k, WMT newstest, any parallel corpus);
- ``words``: lines ``word1 word2`` (PPDB lexical synonyms).
"""
from __future__ import annotations

import csv
import gzip
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

Pair = tuple[str, str, "str | None"]


def _open(path: str | Path):
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"pair file {path} does not exist: set paths.data_dir (env SENTENCE_DATA) or "
                                "the data config's path")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace", newline="")


def read_tsv(path: str, a: int = 0, b: int = 1, label: int | None = None, header: bool = False,
             score: int | None = None, min_score: float | None = None,
             label_names: list[str] | None = None) -> Iterator[Pair]:
    """``label_names``: labels written as indices (XNLI's 0/1/2) are read as these names."""
    with _open(path) as f:
        for n, line in enumerate(f):
            if header and n == 0:
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) <= max(a, b, label or 0, score or 0):
                continue
            if min_score is not None and float(cols[score if score is not None else 0]) < min_score:
                continue
            value = cols[label] if label is not None else None
            if label_names is not None and value is not None and value.isdigit() and int(value) < len(label_names):
                value = label_names[int(value)]
            yield cols[a], cols[b], value


def read_csv(path: str, a: str = "premise", b: str = "hypothesis", label: str | None = "label") -> Iterator[Pair]:
    with _open(path) as f:
        for row in csv.DictReader(f):
            yield row[a], row[b], row[label] if label else None


def read_jsonl(path: str) -> Iterator[Pair]:
    with _open(path) as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                yield row["sentence1"], row["sentence2"], row.get("gold_label")


def read_infersent(path: str, split: str) -> Iterator[Pair]:
    root = Path(path)
    with _open(root / f"s1.{split}") as s1, _open(root / f"s2.{split}") as s2, _open(root / f"labels.{split}") as lab:
        for a, b, label in zip(s1, s2, lab):
            yield a.strip(), b.strip(), label.strip()


def read_sick(path: str) -> Iterator[Pair]:
    with _open(path) as f:
        rows = csv.DictReader(f, delimiter="\t")
        for row in rows:
            yield row["sentence_A"], row["sentence_B"], row["entailment_judgment"].lower()


def read_aligned(path: str, target_path: str) -> Iterator[Pair]:
    with _open(path) as fa, _open(target_path) as fb:
        for a, b in zip(fa, fb):
            yield a.strip(), b.strip(), None


def read_words(path: str) -> Iterator[Pair]:
    with _open(path) as f:
        for line in f:
            words = line.split()
            if len(words) == 2:
                yield words[0], words[1], None


READERS: dict[str, Callable[..., Iterator[Pair]]] = {
    "tsv": read_tsv, "csv": read_csv, "jsonl": read_jsonl, "infersent": read_infersent, "sick": read_sick,
    "aligned": read_aligned, "words": read_words,
}


def read_pairs(split: Mapping[str, Any]) -> list[Pair]:
    """Every pair of one split description (see the module docstring); empty sides are dropped."""
    options = dict(split)
    kind = options.pop("format", None)
    if kind not in READERS:
        raise ValueError(f"unknown pair format {kind!r} in {dict(split)}: use one of {sorted(READERS)}")
    return [(a, b, label) for a, b, label in READERS[kind](**options) if a.strip() and b.strip()]
