"""The ten probing tasks (SentEval ``probing.py``), in SentEval's layout or in X-Probe's.

SentEval: ``probing/<file>.txt`` with ``tr|va|te<TAB>label<TAB>sentence``.
X-Probe: ``probing/xprobe-en/<file>/{va,te}.txt`` with ``sentence<TAB>label`` and no training split:
the probe trains on a fixed, stratified 90% of ``va`` (seed 1111), early-stops on the other 10% and
is tested on ``te``. Labels map to ids by sorting the unique training labels, as SentEval does.
"""
from __future__ import annotations

from functools import partial
from pathlib import Path

from .base import GET_DATA_HINT, MalformedData, MissingTaskData, TaskData, int_split, iter_lines, join_tokens

PROBING_FILES = {
    "Length": "sentence_length",
    "WordContent": "word_content",
    "Depth": "tree_depth",
    "TopConstituents": "top_constituents",
    "BigramShift": "bigram_shift",
    "Tense": "past_present",
    "SubjNumber": "subj_number",
    "ObjNumber": "obj_number",
    "OddManOut": "odd_man_out",
    "CoordinationInversion": "coordination_inversion",
}
XPROBE_SEED = 1111
XPROBE_DEV_FRACTION = 0.1
XPROBE_SPLIT_NOTE = "xprobe: train=90% of va (stratified, seed 1111), dev=other 10% of va, test=te"
SPLIT_NAMES = {"tr": "train", "va": "dev", "te": "test"}


def _label_ids(task: str, raw: dict[str, tuple[list[str], list[str], list[tuple[Path, int]]]]) -> dict[str, int]:
    labels = sorted(set(raw["train"][1]))
    ids = {label: i for i, label in enumerate(labels)}
    for split in ("dev", "test"):
        for label, where in zip(raw[split][1], raw[split][2]):
            if label not in ids:
                raise MalformedData(where[0], where[1], f"{task} label {label!r} never occurs in the training split")
    return ids


def _finish(task: str, raw, info: dict) -> TaskData:
    ids = _label_ids(task, raw)
    splits = {split: int_split(raw[split][0], [ids[y] for y in raw[split][1]]) for split in ("train", "dev", "test")}
    return TaskData(splits=splits, nclasses=len(ids), info={**info, "nclasses": len(ids)})


def _load_senteval_layout(task: str, path: Path) -> TaskData:
    raw = {split: ([], [], []) for split in ("train", "dev", "test")}
    for lineno, line in iter_lines(path):
        fields = line.rstrip().split("\t")
        if len(fields) < 3 or fields[0] not in SPLIT_NAMES:
            raise MalformedData(path, lineno, "expected 'tr|va|te<TAB>label<TAB>sentence'")
        sentences, labels, where = raw[SPLIT_NAMES[fields[0]]]
        sentences.append(join_tokens(fields[-1]))
        labels.append(fields[1])
        where.append((path, lineno))
    for split, (sentences, _, _) in raw.items():
        if not sentences:
            raise MalformedData(path, 0, f"no {split} lines in the file")
    return _finish(task, raw, {"layout": "senteval", "split": "senteval: tr/va/te as in the file"})


def _read_xprobe(path: Path):
    sentences, labels, where = [], [], []
    for lineno, line in iter_lines(path):
        fields = line.rstrip("\n").split("\t")
        if len(fields) != 2 or not fields[1].strip():
            raise MalformedData(path, lineno, "expected 'sentence<TAB>label'")
        sentences.append(join_tokens(fields[0]))
        labels.append(fields[1].strip())
        where.append((path, lineno))
    return sentences, labels, where


def _load_xprobe_layout(task: str, va_path: Path, te_path: Path) -> TaskData:
    import numpy as np
    from sklearn.model_selection import train_test_split

    va = _read_xprobe(va_path)
    te = _read_xprobe(te_path)
    index = np.arange(len(va[0]))
    counts: dict[str, int] = {}
    for label in va[1]:
        counts[label] = counts.get(label, 0) + 1
    stratify = va[1] if min(counts.values()) >= 2 else None
    train_idx, dev_idx = train_test_split(index, test_size=XPROBE_DEV_FRACTION, random_state=XPROBE_SEED,
                                          shuffle=True, stratify=stratify)
    train_idx, dev_idx = np.sort(train_idx), np.sort(dev_idx)  # keep file order; the task sort comes after
    pick = lambda idx: tuple([part[i] for i in idx] for part in va)  # noqa: E731
    raw = {"train": pick(train_idx), "dev": pick(dev_idx), "test": te}
    info = {"layout": "xprobe", "split": XPROBE_SPLIT_NOTE if stratify is not None else
            XPROBE_SPLIT_NOTE.replace("stratified", "not stratified: a label occurs once")}
    if va[0] == te[0]:
        info["warning"] = f"{va_path.name} and {te_path.name} hold the same sentences: the test score is not held-out"
    # labels that occur only in dev/test cannot be learnt: map them from all of va, as the training split's
    # labels would miss rare ones after the 90/10 cut
    all_va = sorted(set(va[1]))
    ids = {label: i for i, label in enumerate(all_va)}
    for label, where in zip(te[1], te[2]):
        if label not in ids:
            raise MalformedData(where[0], where[1], f"{task} label {label!r} never occurs in {va_path.name}")
    splits = {split: int_split(raw[split][0], [ids[y] for y in raw[split][1]]) for split in ("train", "dev", "test")}
    return TaskData(splits=splits, nclasses=len(ids), info={**info, "nclasses": len(ids)})


def load_probing(task: str, data_dir: Path) -> TaskData:
    name = PROBING_FILES[task]
    root = Path(data_dir) / "probing"
    senteval_path = root / f"{name}.txt"
    if senteval_path.is_file():
        return _load_senteval_layout(task, senteval_path)
    va_path, te_path = root / "xprobe-en" / name / "va.txt", root / "xprobe-en" / name / "te.txt"
    if va_path.is_file() and te_path.is_file():
        return _load_xprobe_layout(task, va_path, te_path)
    expected = f"{senteval_path} (SentEval layout) or {va_path.parent}/{{va,te}}.txt (X-Probe layout)"
    raise MissingTaskData(task, expected, GET_DATA_HINT)


LOADERS = {task: partial(load_probing, task) for task in PROBING_FILES}
