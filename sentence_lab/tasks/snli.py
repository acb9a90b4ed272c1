"""SNLI (SentEval ``snli.py``): ``s1.<split>``, ``s2.<split>``, ``labels.<split>``, one item a line.

SentEval sorts each split by (tokens of s2, tokens of s1, label string). It reads the text as
latin-1 and, under Python 3, hands byte tokens to the batcher; the files are UTF-8 and are read
as such here.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from sentence_lab.tasks.base import (
    MalformedData,
    MissingTaskData,
    Split,
    TaskData,
    downstream_dir,
    join_tokens,
    ntokens,
    read_lines,
)

SNLI_LABELS = {"entailment": 0, "neutral": 1, "contradiction": 2}
SNLI_SPLITS = ("train", "dev", "test")
SNLI_HINT = ("SNLI's training split (s1.train, s2.train, labels.train) is not in this data folder: "
             "get it with scripts/get_senteval_data.sh <data_dir> (needs internet), or leave SNLI out of tasks=")


def load_snli(data_dir: Path) -> TaskData:
    root = downstream_dir(data_dir) / "SNLI"
    for split in SNLI_SPLITS:
        for kind in ("s1", "s2", "labels"):
            path = root / f"{kind}.{split}"
            if not path.is_file():
                hint = SNLI_HINT if split == "train" and root.is_dir() else None
                raise MissingTaskData("SNLI", path, *([hint] if hint else []))
    splits = {}
    for split in SNLI_SPLITS:
        s1 = [join_tokens(x) for x in read_lines(root / f"s1.{split}")]
        s2 = [join_tokens(x) for x in read_lines(root / f"s2.{split}")]
        labels = read_lines(root / f"labels.{split}")
        if not len(s1) == len(s2) == len(labels):
            raise MalformedData(root / f"labels.{split}", min(len(s1), len(s2), len(labels)) + 1,
                                f"s1/s2/labels.{split} have {len(s1)}/{len(s2)}/{len(labels)} lines, must be equal")
        for lineno, label in enumerate(labels, start=1):
            if label not in SNLI_LABELS:
                raise MalformedData(root / f"labels.{split}", lineno, f"label {label!r} not in {sorted(SNLI_LABELS)}")
        order = sorted(range(len(s1)), key=lambda i: (ntokens(s2[i]), ntokens(s1[i]), labels[i]))
        splits[split] = Split(a=[s1[i] for i in order], b=[s2[i] for i in order],
                              y=np.asarray([SNLI_LABELS[labels[i]] for i in order], dtype=np.int64))
    return TaskData(splits=splits, nclasses=3, info={"labels": SNLI_LABELS})
