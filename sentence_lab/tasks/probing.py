"""The ten probing tasks (SentEval ``probing.py``), in SentEval's layout, X-Probe's, or generated.

Where they come from is the ``probing`` setting (``evaluate.py probing=...``, ``callbacks.eval_suite.probing``):
``auto`` (default) takes SentEval's files under the data root, else X-Probe's, and when the data root has no
probing data at all the set generated from the shipped books (``assets/probing/books-en``, made by
``sentence_lab.probing_gen``); ``senteval``, ``xprobe``
and ``generated`` pick one; ``generated:<dir>`` (or a folder path) reads a set made by the generator.

Another language's tasks (a bilingual model's second side, ``language=fr``): ``auto`` reads
``probing/xprobe-<language>/`` (X-Probe's layout), else ``probing/generated-<language>/`` (a set the generator made
with ``language=<language>``); ``xprobe`` and ``generated`` pick one; ``generated:<dir>`` reads that folder, refused
when its ``meta.json`` names another language. SentEval's probing data is English only.

SentEval: ``probing/<file>.txt`` with ``tr|va|te<TAB>label<TAB>sentence`` (also ``.txt.xz``).
X-Probe: ``probing/xprobe-en/<file>/{va,te}.txt`` with ``sentence<TAB>label`` and no training split:
the probe trains on a fixed, stratified 90% of ``va`` (seed 1111), early-stops on the other 10% and
is tested on ``te``. Labels map to ids by sorting the unique training labels, as SentEval does.
"""
from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

from sentence_lab.home import ASSETS
from sentence_lab.tasks.base import (
    GET_DATA_HINT,
    MalformedData,
    MissingTaskData,
    TaskData,
    TaskDataError,
    int_split,
    iter_lines,
    join_tokens,
)

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


Raw = dict[str, tuple[list[str], list[str], list[tuple[Path, int]]]]  # split -> sentences, labels, (file, line)


def senteval_layout_splits(path: Path) -> Raw:
    """A file in SentEval's probing layout: per split (train, dev, test) its sentences, their labels as written, and
    where each line is."""
    raw: Raw = {split: ([], [], []) for split in ("train", "dev", "test")}
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
    return raw


def _load_senteval_layout(task: str, path: Path, layout: str = "senteval") -> TaskData:
    return _finish(task, senteval_layout_splits(path), {"layout": layout, "split": "tr/va/te as in the file"})


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


def xprobe_layout_splits(va_path: Path, te_path: Path) -> tuple[Raw, dict]:
    """X-Probe's ``va`` and ``te`` files as train (a fixed 90% of ``va``), dev (the other 10%) and test (``te``), and
    the notes on that split."""
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
    return raw, info


def _load_xprobe_layout(task: str, va_path: Path, te_path: Path) -> TaskData:
    raw, info = xprobe_layout_splits(va_path, te_path)
    va_labels = raw["train"][1] + raw["dev"][1]
    # labels that occur only in dev/test cannot be learnt: map them from all of va, as the training split's
    # labels would miss rare ones after the 90/10 cut
    all_va = sorted(set(va_labels))
    ids = {label: i for i, label in enumerate(all_va)}
    for label, where in zip(raw["test"][1], raw["test"][2]):
        if label not in ids:
            raise MalformedData(where[0], where[1], f"{task} label {label!r} never occurs in {va_path.name}")
    splits = {split: int_split(raw[split][0], [ids[y] for y in raw[split][1]]) for split in ("train", "dev", "test")}
    return TaskData(splits=splits, nclasses=len(ids), info={**info, "nclasses": len(ids)})


SHIPPED_SET = ASSETS / "probing" / "books-en"
SOURCES = ("auto", "senteval", "xprobe", "generated")
SOURCE_HINT = "probing= takes auto, senteval, xprobe, generated or generated:<dir>"


def _senteval_file(folder: Path, name: str) -> Path | None:
    for suffix in (".txt", ".txt.xz"):
        if (folder / f"{name}{suffix}").is_file():
            return folder / f"{name}{suffix}"
    return None


def _load_generated(task: str, folder: Path) -> TaskData:
    """A set made by ``sentence_lab.probing_gen``: SentEval's layout, and a meta.json whose notes are kept."""
    name = PROBING_FILES[task]
    path = _senteval_file(folder, name)
    if path is None:
        meta_path = folder / "meta.json"
        why = ""
        if meta_path.is_file():
            skipped = json.loads(meta_path.read_text(encoding="utf-8")).get("skipped", {})
            why = f" (the generator skipped it: {skipped[task]})" if task in skipped else ""
        raise MissingTaskData(task, f"{folder / name}.txt{why}",
                              "generate it with python -m sentence_lab.probing_gen corpus=<text> out=<dir>")
    data = _load_senteval_layout(task, path, layout="generated")
    data.info["probing_set"] = str(folder)
    meta_path = folder / "meta.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        entry = meta.get("tasks", {}).get(task, {})
        data.info["generated"] = {"corpus": meta.get("source", {}).get("corpus"),
                                  "parser": (meta.get("tagger_parser") or {}).get("pipeline"),
                                  **({"approximation": entry["approximation"]} if "approximation" in entry else {})}
        if "floors" in entry:  # the generator computed the set's Table 2 baselines on these very rows
            data.info["floors"] = entry["floors"]
        if "source_baseline" in entry:
            data.info["source_baseline"] = entry["source_baseline"]
    return data


def _has_probing_data(root: Path) -> bool:
    """Any task in SentEval's or X-Probe's layout: then ``auto`` reads that data root only (a task it lacks
    stays missing rather than coming from another source)."""
    return any(_senteval_file(root, name) is not None or (root / "xprobe-en" / name / "te.txt").is_file()
               for name in PROBING_FILES.values())


def _named_folder(task: str, source: str) -> Path | None:
    """The folder ``generated:<dir>`` (or a bare path) names; ``None`` for a named source (auto, xprobe, ...)."""
    if not (source.startswith("generated:") or source not in SOURCES):
        return None
    folder = Path(source.split(":", 1)[1] if source.startswith("generated:") else source).expanduser()
    if not folder.is_dir():
        raise MissingTaskData(task, folder, f"no such folder: {SOURCE_HINT}")
    return folder


def _generated_language(folder: Path) -> str | None:
    """The language a generated set's ``meta.json`` records (``None``: no meta, or a set made before languages)."""
    try:
        return json.loads((folder / "meta.json").read_text(encoding="utf-8")).get("language")
    except (OSError, ValueError, AttributeError):
        return None


def load_probing_in(task: str, data_dir: Path, source: str, language: str) -> TaskData:
    """``task`` in a language other than English (see the module docstring for where it is read)."""
    name = PROBING_FILES[task]
    root = Path(data_dir) / "probing"
    if source == "senteval":
        raise MissingTaskData(task, root / f"xprobe-{language}", f"SentEval's probing data is English only: "
                              f"give probing=xprobe, generated or generated:<dir> for {language!r}")
    if (folder := _named_folder(task, source)) is not None:
        written_in = _generated_language(folder)
        if written_in is not None and written_in != language:
            raise TaskDataError(f"{folder} holds {written_in!r} probing tasks, not {language!r}: give the set "
                                f"generated with language={language}")
        return _load_generated(task, folder)
    xprobe, generated = root / f"xprobe-{language}" / name, root / f"generated-{language}"
    if source in ("auto", "xprobe") and (xprobe / "va.txt").is_file() and (xprobe / "te.txt").is_file():
        return _load_xprobe_layout(task, xprobe / "va.txt", xprobe / "te.txt")
    if source in ("auto", "generated") and generated.is_dir():
        return _load_generated(task, generated)
    raise MissingTaskData(task, f"{xprobe}/{{va,te}}.txt (X-Probe layout) or {generated}/",
                          f"generate it with python -m sentence_lab.probing_gen language={language} corpus=<text> "
                          f"out={generated}")


def load_probing(task: str, data_dir: Path, source: str = "auto", language: str = "en") -> TaskData:
    name = PROBING_FILES[task]
    source = str(source or "auto")
    if language != "en":
        return load_probing_in(task, data_dir, source, language)
    root = Path(data_dir) / "probing"
    senteval_path = _senteval_file(root, name)
    va_path, te_path = root / "xprobe-en" / name / "va.txt", root / "xprobe-en" / name / "te.txt"
    if (folder := _named_folder(task, source)) is not None:
        return _load_generated(task, folder)
    if source in ("auto", "senteval") and senteval_path is not None:
        return _load_senteval_layout(task, senteval_path)
    if source in ("auto", "xprobe") and va_path.is_file() and te_path.is_file():
        return _load_xprobe_layout(task, va_path, te_path)
    if source == "generated" or (source == "auto" and not _has_probing_data(root)):
        return _load_generated(task, SHIPPED_SET)
    expected = (f"{root / name}.txt (SentEval layout)" if source == "senteval"
                else f"{va_path.parent}/{{va,te}}.txt (X-Probe layout)")
    raise MissingTaskData(task, expected, GET_DATA_HINT)


LOADERS = {task: partial(load_probing, task) for task in PROBING_FILES}
