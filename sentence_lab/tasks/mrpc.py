"""MRPC paraphrase detection (SentEval ``mrpc.py``): tab-separated, header line, utf-8."""
from __future__ import annotations

from pathlib import Path

from sentence_lab.tasks.base import (
    MalformedData,
    TaskData,
    iter_lines,
    join_tokens,
    pair_split,
    split_files,
)


def _load_file(path: Path):
    a, b, y = [], [], []
    for lineno, line in iter_lines(path):
        if lineno == 1:
            continue  # header (starts with a byte-order mark in the official files)
        text = line.strip().split("\t")
        if len(text) < 5 or text[0] not in ("0", "1"):
            raise MalformedData(path, lineno, "expected 'Quality<TAB>#1 ID<TAB>#2 ID<TAB>#1 String<TAB>#2 String'"
                                              " with Quality 0 or 1")
        a.append(join_tokens(text[3]))
        b.append(join_tokens(text[4]))
        y.append(int(text[0]))
    return a, b, y


MRPC_FILES = {"train": "msr_paraphrase_train.txt", "test": "msr_paraphrase_test.txt"}


def load_mrpc(data_dir: Path) -> TaskData:
    paths = split_files("MRPC", data_dir, "MRPC", MRPC_FILES)
    return TaskData(splits={split: pair_split(*_load_file(path)) for split, path in paths.items()}, nclasses=2)
