"""TREC question types (SentEval ``trec.py``): ``COARSE:fine question``, latin-1, 6 coarse classes."""
from __future__ import annotations

from pathlib import Path

from sentence_lab.tasks.base import (
    MalformedData,
    TaskData,
    int_split,
    iter_lines,
    join_tokens,
    split_files,
)

TREC_LABELS = {"ABBR": 0, "DESC": 1, "ENTY": 2, "HUM": 3, "LOC": 4, "NUM": 5}


def _load_file(path: Path) -> tuple[list[str], list[int]]:
    sentences, labels = [], []
    for lineno, line in iter_lines(path, "latin-1"):
        parts = line.strip().split(":", 1)
        if len(parts) != 2 or parts[0] not in TREC_LABELS or " " not in parts[1]:
            raise MalformedData(path, lineno, f"expected 'COARSE:fine question' with COARSE in {sorted(TREC_LABELS)}")
        sentences.append(join_tokens(parts[1].split(" ", 1)[1]))
        labels.append(TREC_LABELS[parts[0]])
    return sentences, labels


TREC_FILES = {"train": "train_5500.label", "test": "TREC_10.label"}


def load_trec(data_dir: Path) -> TaskData:
    paths = split_files("TREC", data_dir, "TREC", TREC_FILES)
    return TaskData(splits={split: int_split(*_load_file(path)) for split, path in paths.items()}, nclasses=6,
                    info={"labels": TREC_LABELS})
