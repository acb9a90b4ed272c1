"""The probing paper's baseline rows (Table 2, top block) on a set: each reads what it should and nothing else."""
import random

import numpy as np
import pytest

from sentence_lab.evaluation.encoders.baselines import LengthEncoder
from sentence_lab.evaluation.probing.floors import PAPER_FLOORS, length_accuracy, majority_accuracy, probing_floors
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.runner import LoadedTask, _summary_line, run_task
from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache
from sentence_lab.tasks.base import Split, TaskData
from sentence_lab.tasks.registry import TASKS

WORDS = [f"w{i}" for i in range(40)]


def _parts(make, sizes=(600, 120, 120), seed=0, classes=2):
    rng = random.Random(seed)
    out = []
    for size in sizes:
        labels = [i % classes for i in range(size)]
        out.append(([make(rng, y) for y in labels], labels))
    return out


def by_length(rng, y):
    """The label is the length bin (5-8 or 9-12 tokens): random words otherwise."""
    return " ".join(rng.choices(WORDS, k=rng.randint(5, 8) if y == 0 else rng.randint(9, 12)))


def by_word(rng, y):
    return " ".join(rng.sample(WORDS, 6) + ["past" if y else "now"])


def by_order(rng, y):
    filler = rng.sample(WORDS, 4)
    return " ".join(filler[:2] + (["alpha", "beta"] if y else ["beta", "alpha"]) + filler[2:])


def test_majority_is_the_most_frequent_training_label_on_test():
    assert majority_accuracy(["a", "a", "b"], ["a", "b", "b", "b"]) == 25.0
    assert majority_accuracy([0, 1], [0, 1, 1, 1]) == 25.0  # a tie: the first label


def test_length_reads_length_and_only_length():
    floors = probing_floors(*_parts(by_length))
    assert floors["length"] == 100.0  # the paper: 100 on SentLen
    assert 40 <= floors["nb_uni_tfidf"] <= 60  # the same random words in both classes
    assert floors["majority"] == 50.0
    words = probing_floors(*_parts(by_word))
    assert words["nb_uni_tfidf"] == 100.0 and 40 <= words["length"] <= 60


def test_length_separates_six_ordered_bins_as_the_paper_does():
    def six_bins(rng, y):
        return " ".join(rng.choices(WORDS, k=5 + 4 * y + rng.randint(0, 3)))

    assert length_accuracy(*_parts(six_bins, classes=6, sizes=(1200, 240, 240))) == 100.0


def test_only_the_bigram_row_sees_word_order():
    floors = probing_floors(*_parts(by_order, sizes=(800, 200, 400)))
    assert 35 <= floors["nb_uni_tfidf"] <= 65 and floors["nb_bi_tfidf"] == 100.0


def test_the_papers_rows_are_transcribed():
    # Conneau et al. 2018, Table 2 (top block): Tense 56.5 / 77.7 / 75.9, WC 0.2 / 97.8 / 95.0
    assert [PAPER_FLOORS[row]["Tense"] for row in ("length", "nb_uni_tfidf", "nb_bi_tfidf")] == [56.5, 77.7, 75.9]
    assert [PAPER_FLOORS[row]["WordContent"] for row in ("length", "nb_uni_tfidf", "nb_bi_tfidf")] == [0.2, 97.8, 95.0]


@pytest.mark.parametrize("task", ["Length"])
def test_a_probing_result_carries_its_floors_computed_once(task, monkeypatch):
    parts = _parts(by_length)
    splits = {name: Split(a=list(x), y=np.asarray(y)) for name, (x, y) in zip(("train", "dev", "test"), parts)}
    data = TaskData(splits=splits, nclasses=2)
    loaded = LoadedTask(TASKS[task], data)
    params = ProtocolParams(l2_grid=(1e-5,))
    result = run_task(loaded, EmbeddingCache(LengthEncoder()), params)
    assert result["floors"]["length"] == 100.0 and set(result["floors"]) >= {"majority", "nb_uni_tfidf"}
    assert "(floor 100.00 Length)" in _summary_line(task, result)  # the console's line names the highest
    calls = []
    monkeypatch.setattr("sentence_lab.evaluation.runner.probing_floors", lambda *a: calls.append(a) or {})
    again = run_task(loaded, EmbeddingCache(LengthEncoder()), params)
    assert again["floors"] == result["floors"] and not calls  # kept with the loaded set: once per run, not per epoch


def test_a_task_of_one_class_has_every_floor_at_the_majority():
    one = (["a b c", "d e"], ["x", "x"])
    floors = probing_floors(one, one, one)
    assert {row: floors[row] for row in ("majority", "length", "nb_uni_tfidf", "nb_bi_tfidf")} == \
        dict.fromkeys(("majority", "length", "nb_uni_tfidf", "nb_bi_tfidf"), 100.0)
