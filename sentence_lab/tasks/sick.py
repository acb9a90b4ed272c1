"""SICK relatedness and entailment (SentEval ``sick.py``): tab-separated, header line, utf-8."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from sentence_lab.tasks.base import (
    MalformedData,
    TaskData,
    iter_lines,
    join_tokens,
    pair_split,
    split_files,
)
from sentence_lab.tasks.sts import test_split_only

SICK_LABELS = {"CONTRADICTION": 0, "NEUTRAL": 1, "ENTAILMENT": 2}
SICK_FILES = {"train": "SICK_train.txt", "dev": "SICK_trial.txt", "test": "SICK_test_annotated.txt"}


def _load_file(path: Path, entailment: bool) -> tuple[list[str], list[str], list[float]]:
    a: list[str] = []
    b: list[str] = []
    y: list[float] = []
    for lineno, line in iter_lines(path):
        if lineno == 1:
            continue
        text = line.strip().split("\t")
        try:
            if len(text) < 5:
                raise ValueError
            target = SICK_LABELS[text[4]] if entailment else float(text[3])
        except (ValueError, KeyError):
            raise MalformedData(path, lineno, "expected 'pair_ID<TAB>sentence_A<TAB>sentence_B<TAB>score<TAB>"
                                              f"judgment' with judgment in {sorted(SICK_LABELS)}") from None
        a.append(join_tokens(text[1]))
        b.append(join_tokens(text[2]))
        y.append(target)
    return a, b, y


def _load(task: str, data_dir: Path, entailment: bool) -> TaskData:
    paths = split_files(task, data_dir, "SICK", SICK_FILES)
    dtype = np.int64 if entailment else np.float64
    splits = {split: pair_split(*_load_file(path, entailment), dtype=dtype) for split, path in paths.items()}
    if entailment:
        return TaskData(splits=splits, nclasses=3, info={"labels": SICK_LABELS})
    return TaskData(splits=splits)


def load_sick_entailment(data_dir: Path) -> TaskData:
    return _load("SICKEntailment", data_dir, entailment=True)


def load_sick_relatedness(data_dir: Path) -> TaskData:
    return _load("SICKRelatedness", data_dir, entailment=False)


def load_sick_relatedness_cosine(data_dir: Path) -> TaskData:
    """SICK-R's test split for cosine scoring (SimCSE's protocol)."""
    return test_split_only(load_sick_relatedness, data_dir)
