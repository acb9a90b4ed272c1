"""MR, CR, SUBJ, MPQA (SentEval ``binary.py``): one sentence per line, latin-1, class from the file."""
from __future__ import annotations

from functools import partial
from pathlib import Path

from sentence_lab.tasks.base import TaskData, downstream_dir, int_split, join_tokens, read_lines, require


def load_binary(task: str, folder: str, positive: str, negative: str, data_dir: Path) -> TaskData:
    """Label 1 for the lines of ``positive``, 0 for ``negative``; all of them in one split for nested CV."""
    root = downstream_dir(data_dir) / folder
    pos_path, neg_path = root / positive, root / negative
    require(task, pos_path, neg_path)
    pos = [join_tokens(line) for line in read_lines(pos_path, "latin-1")]
    neg = [join_tokens(line) for line in read_lines(neg_path, "latin-1")]
    split = int_split(pos + neg, [1] * len(pos) + [0] * len(neg))
    return TaskData(splits={"all": split}, nclasses=2)


# (positive file, negative file) per task. SUBJ: SentEval passes (objective, subjective) as (pos, neg): objective
# sentences are label 1.
BINARY_FILES = {"MR": ("rt-polarity.pos", "rt-polarity.neg"), "CR": ("custrev.pos", "custrev.neg"),
                "SUBJ": ("subj.objective", "subj.subjective"), "MPQA": ("mpqa.pos", "mpqa.neg")}
load_mr = partial(load_binary, "MR", "MR", *BINARY_FILES["MR"])
load_cr = partial(load_binary, "CR", "CR", *BINARY_FILES["CR"])
load_subj = partial(load_binary, "SUBJ", "SUBJ", *BINARY_FILES["SUBJ"])
load_mpqa = partial(load_binary, "MPQA", "MPQA", *BINARY_FILES["MPQA"])
