"""Control tasks (Hewitt & Liang 2019, "Designing and interpreting probes with control tasks"), for sentence-level
probing tasks.

A control task keeps a task's sentences and splits and replaces each label by a fixed random function of a surface
identity of the sentence: by default its first word. Every word type gets one label, once (seeded), and keeps it in
every split. The labels are dealt so that the control has the task's label distribution over the training
sentences: types in random order, the most frequent first, each to the label furthest below its share (types are
Zipfian: drawn independently, "the" alone would carry a fifth of the sentences to one label and skew the control's
chance level). A type too frequent for any one label's share (a fifth of the sentences in a six-class task)
overfills its label; the control's own chance level is reported beside it (``majority``).
The only way to score above chance on it is to
memorise which type goes with which label, so a probe's control accuracy measures how much it can memorise from
the vectors; a task's *selectivity* is its accuracy minus its control accuracy (high: the probe reads the property,
not the sentence's identity).

Why the first word: it is a surface identity every encoder sees, fixed by the sentence and unrelated to any probing
label; an encoder that keeps position (a BiLSTM's first state, a GRU) makes it easy to memorise, one that averages
(BoV) makes it hard, so the control separates what an encoder lets a probe memorise. ``last_word`` is the other
function offered (``evaluation.control_function``).
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from sentence_lab.tasks.base import Split, TaskData

CONTROL_SEED = 1111


def _first_word(sentence: str) -> str:
    words = sentence.split()
    return words[0].lower() if words else ""


def _last_word(sentence: str) -> str:
    words = sentence.split()
    return words[-1].lower() if words else ""


FUNCTIONS = {"first_word": _first_word, "last_word": _last_word}


def check_function(name: str) -> None:
    if name not in FUNCTIONS:
        raise ValueError(f"control_function={name!r}: use one of {', '.join(FUNCTIONS)}")


def control_task(data: TaskData, function: str = "first_word", seed: int = CONTROL_SEED) -> TaskData:
    """The control task of a single-sentence classification task: same sentences and splits, each label replaced by
    the label dealt to its sentence's ``function`` type (the task's label distribution over training sentences)."""
    check_function(function)
    identity = FUNCTIONS[function]
    train = data.splits["train"]
    nclasses = int(data.nclasses or int(train.y.max()) + 1)
    share = np.bincount(train.y.astype(np.int64), minlength=nclasses) / len(train)
    mass = Counter(identity(s) for s in train.a)  # training sentences per type (0 for types seen only in dev/test)
    rng = np.random.default_rng(seed)
    types = sorted({identity(s) for split in data.splits.values() for s in split.a})
    types = [types[i] for i in rng.permutation(len(types))]
    types.sort(key=lambda t: -mass[t])  # stable: random order among types of equal frequency
    dealt, label = np.zeros(nclasses), {}
    for t in types:
        deficit = share * len(train) - dealt
        best = np.flatnonzero(deficit == deficit.max())
        label[t] = int(best[rng.integers(len(best))])
        dealt[label[t]] += mass[t] if mass[t] else share[label[t]]
    splits = {name: Split(a=split.a, y=np.asarray([label[identity(s)] for s in split.a], dtype=np.int64))
              for name, split in data.splits.items()}
    return TaskData(splits=splits, nclasses=nclasses, info={"control": function, "control_types": len(types)})
