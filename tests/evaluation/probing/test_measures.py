"""Controls, selectivity and MDL where the answer is known: vectors that encode the label, random vectors, and
vectors that encode the first word's identity but not the label."""
from __future__ import annotations

import numpy as np
import pytest

from sentence_lab.evaluation.probing import measures as probing_measures
from sentence_lab.evaluation.probing.controls import control_task
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.regimes import split
from sentence_lab.tasks.base import Split, TaskData
from sentence_lab.tasks.registry import TASKS

PARAMS = ProtocolParams(max_epoch=40, l2_grid=(1e-4,), controls=True, mdl=True)
FIRST_WORDS = [f"w{i}" for i in range(40)]


def _task(seed: int = 0, sizes=(800, 200, 200)) -> TaskData:
    """Two balanced classes; each sentence starts with one of 40 word types, independently of its label."""
    rng = np.random.default_rng(seed)
    splits, k = {}, 0
    for name, n in zip(("train", "dev", "test"), sizes):
        y = rng.permutation(np.arange(n) % 2)
        a = [f"{FIRST_WORDS[rng.integers(40)]} sentence number {k + i}" for i in range(n)]
        splits[name], k = Split(a=a, y=y.astype(np.int64)), k + n
    return TaskData(splits=splits, nclasses=2)


def _embed(data: TaskData, kind: str, d: int = 40, seed: int = 1):
    rng = np.random.default_rng(seed)
    table = {}
    for data_split in data.splits.values():
        for s, y in zip(data_split.a, data_split.y):
            if kind == "label":  # the label, plainly, plus noise
                v = rng.normal(0, 0.3, d) + 2.0 * np.eye(d)[int(y)]
            elif kind == "first_word":  # the first word's identity, nothing of the label
                v = rng.normal(0, 0.3, d) + 2.0 * np.eye(d)[FIRST_WORDS.index(s.split()[0])]
            else:
                v = rng.normal(0, 1.0, d)
            table[s] = v.astype(np.float32)
    return lambda sentences: np.stack([table[s] for s in sentences])


def _measure(kind: str) -> dict:
    data = _task()
    embed = _embed(data, kind)
    spec = TASKS["Tense"]
    result = split.run(spec, data, embed, PARAMS)
    return {**result, **probing_measures.measure(spec, data, embed, PARAMS, result)}


def test_vectors_that_encode_the_label():
    r = _measure("label")
    assert r["acc"] > 95 and r["control"]["acc"] < 65 and r["selectivity"] > 30
    assert r["mdl"]["compression"] > 3  # the labels cost far less than the uniform code


def test_random_vectors():
    r = _measure("random")
    assert 35 < r["acc"] < 65 and 35 < r["control"]["acc"] < 65
    assert 50 <= r["control"]["majority"] < 60  # the control's own chance: its most frequent label on test
    assert 0.8 < r["mdl"]["compression"] < 1.15  # about the uniform code


def test_vectors_that_encode_the_first_word_but_not_the_label():
    r = _measure("first_word")
    assert 35 < r["acc"] < 65 and r["control"]["acc"] > 75 and r["selectivity"] < -15


def test_the_control_label_is_a_fixed_function_of_the_first_word_dealt_to_the_label_distribution():
    data = _task(sizes=(4000, 10, 10))
    data.splits["train"].y[:3000] = 0  # a skewed distribution: of 4000, the last 1000 are balanced: p(1) = 1/8
    data.splits["train"].a[:] = [f"t{i} {s}" for i, s in enumerate(data.splits["train"].a)]  # 4000 first-word types
    control = control_task(data, "first_word", seed=3)
    assert control_task(data, "first_word", seed=3).splits["train"].y.tolist() == control.splits["train"].y.tolist()
    assert control.splits["train"].a == data.splits["train"].a
    assert data.splits["train"].y.mean() == pytest.approx(0.125, abs=0.005)
    assert control.splits["train"].y.mean() == pytest.approx(0.125, abs=0.001)  # labels dealt to match it
    small = _task()
    labels = {}
    for split_ in control_task(small).splits.values():
        for s, y in zip(split_.a, split_.y):
            assert labels.setdefault(s.split()[0], y) == y  # one label a type, in every split
    with pytest.raises(ValueError, match="control_function='middle_word'"):
        control_task(small, "middle_word")


def test_a_zipfian_first_word_does_not_skew_the_control():
    """One type holding a third of a balanced binary task still leaves the control balanced over training sentences."""
    data = _task(sizes=(900, 100, 100))
    train = data.splits["train"]
    train.a[:] = [("the " if i % 3 == 0 else f"x{i} ") + s for i, s in enumerate(train.a)]
    control = control_task(data)
    assert abs(control.splits["train"].y.mean() - train.y.mean()) < 0.01
    assert len({y for s, y in zip(control.splits["train"].a, control.splits["train"].y) if s.startswith("the ")}) == 1
