"""SST-2 and SST-5 (SentEval ``sst.py``): train/dev/test files, utf-8."""
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


def _load_file(path: Path, nclasses: int) -> tuple[list[str], list[int]]:
    sentences, labels = [], []
    for lineno, line in iter_lines(path):
        try:
            if nclasses == 2:  # "sentence<TAB>label"
                text, label = line.strip().split("\t")
            else:  # "label sentence"
                label, text = line.strip().split(" ", 1)
            y = int(label)
        except ValueError:
            form = "sentence<TAB>label" if nclasses == 2 else "label<SPACE>sentence"
            raise MalformedData(path, lineno, f"expected {form} with an integer label") from None
        if not 0 <= y < nclasses:
            raise MalformedData(path, lineno, f"label {y} outside 0..{nclasses - 1}")
        sentences.append(join_tokens(text))
        labels.append(y)
    return sentences, labels


def load_sst(task: str, nclasses: int, data_dir: Path) -> TaskData:
    paths = split_files(task, data_dir, f"SST/{'binary' if nclasses == 2 else 'fine'}",
                        {split: f"sentiment-{split}" for split in ("train", "dev", "test")})
    splits = {}
    for split, path in paths.items():
        sentences, labels = _load_file(path, nclasses)
        splits[split] = int_split(sentences, labels)
    return TaskData(splits=splits, nclasses=nclasses)


def load_sst2(data_dir: Path) -> TaskData:
    return load_sst("SST2", 2, data_dir)


def load_sst5(data_dir: Path) -> TaskData:
    return load_sst("SST5", 5, data_dir)
