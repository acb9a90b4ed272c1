"""STS12-16 (unsupervised, cosine) and STS Benchmark (supervised) as SentEval's ``sts.py`` reads them; and the
test splits of STS-B and SICK-R scored by cosine alone, the protocol SimCSE popularised (Gao et al. 2021)."""
from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np

from sentence_lab.tasks.base import (
    MalformedData,
    TaskData,
    downstream_dir,
    iter_lines,
    join_tokens,
    pair_split,
    read_lines,
    require,
    split_files,
)

# SentEval's sub-datasets; STS13 has no SMT subset (licence), as upstream.
STS_DATASETS = {
    "STS12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "STS13": ("FNWN", "headlines", "OnWN"),
    "STS14": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    "STS15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "STS16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}


def load_sts_year(task: str, data_dir: Path) -> TaskData:
    """One split per sub-dataset; pairs whose gold score line is empty are dropped."""
    root = downstream_dir(data_dir) / "STS" / f"{task}-en-test"
    names = STS_DATASETS[task]
    files = {name: (root / f"STS.input.{name}.txt", root / f"STS.gs.{name}.txt") for name in names}
    require(task, *[p for pair in files.values() for p in pair])
    splits, dropped = {}, {}
    for name, (input_path, gs_path) in files.items():
        inputs = read_lines(input_path)
        scores = read_lines(gs_path)
        if len(inputs) != len(scores):
            raise MalformedData(gs_path, min(len(inputs), len(scores)) + 1,
                                f"{len(scores)} gold scores for {len(inputs)} sentence pairs in {input_path.name}")
        a, b, y = [], [], []
        for lineno, (line, score) in enumerate(zip(inputs, scores), start=1):
            fields = line.split("\t")
            if len(fields) != 2:
                raise MalformedData(input_path, lineno, f"expected 'sentence1<TAB>sentence2', got {len(fields)} fields")
            if score == "":
                continue
            try:
                value = float(score)
            except ValueError:
                raise MalformedData(gs_path, lineno, f"gold score {score!r} is not a number") from None
            a.append(join_tokens(fields[0]))
            b.append(join_tokens(fields[1]))
            y.append(value)
        dropped[name] = len(inputs) - len(a)
        splits[name] = pair_split(a, b, y, dtype=np.float64)
    return TaskData(splits=splits, info={"pairs_without_gold_score_dropped": dropped})


def _load_stsb_file(path: Path) -> tuple[list[str], list[str], list[float]]:
    a: list[str] = []
    b: list[str] = []
    y: list[float] = []
    for lineno, line in iter_lines(path):
        text = line.strip().split("\t")
        try:
            if len(text) < 7:
                raise ValueError
            y.append(float(text[4]))
        except ValueError:
            raise MalformedData(path, lineno, "expected 7 tab-separated fields with the score in field 5") from None
        a.append(join_tokens(text[5]))
        b.append(join_tokens(text[6]))
    return a, b, y


def load_sts_benchmark(data_dir: Path) -> TaskData:
    paths = split_files("STSBenchmark", data_dir, "STS/STSBenchmark",
                        {split: f"sts-{split}.csv" for split in ("train", "dev", "test")})
    return TaskData(splits={split: pair_split(*_load_stsb_file(p), dtype=np.float64) for split, p in paths.items()})


load_sts12 = partial(load_sts_year, "STS12")
load_sts13 = partial(load_sts_year, "STS13")
load_sts14 = partial(load_sts_year, "STS14")
load_sts15 = partial(load_sts_year, "STS15")
load_sts16 = partial(load_sts_year, "STS16")


def test_split_only(load, data_dir: Path) -> TaskData:
    """The task's dev and test splits, for cosine scoring with no trained regressor (SimCSE's STS-B / SICK-R):
    the test split is scored, the dev split only in dev-only mode."""
    data = load(data_dir)
    return TaskData(splits={"dev": data.splits["dev"], "test": data.splits["test"]},
                    info={**data.info, "protocol": "cosine similarity on the test split, no trained regressor "
                          "(SimCSE's evaluation); SentEval's trained-regressor score is the task without 'Cosine'"})


load_sts_benchmark_cosine = partial(test_split_only, load_sts_benchmark)
