"""NB-tfidf baselines: word cues are learnt by both, word order only by the bigram one."""
import random

import numpy as np
import pytest

from sentence_lab.evaluation.encoders.nb_baselines import NBTfidfEncoder
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.tasks.base import Split, TaskData
from sentence_lab.tasks.registry import TASKS


def _task(make, n=(200, 40, 40), seed=0) -> TaskData:
    rng = random.Random(seed)
    splits = {}
    for name, size in zip(("train", "dev", "test"), n):
        labels = [i % 2 for i in range(size)]
        splits[name] = Split(a=[make(rng, y) for y in labels], y=np.asarray(labels))
    return TaskData(splits=splits, nclasses=2)


WORDS = [f"w{i}" for i in range(30)]


def cue_words(rng, y):
    return " ".join(rng.sample(WORDS, 5) + ["good" if y else "bad"])


def word_order(rng, y):
    """The same two words in every sentence; the label is their order: invisible to unigrams."""
    filler = rng.sample(WORDS, 4)
    return " ".join(filler[:2] + (["alpha", "beta"] if y else ["beta", "alpha"]) + filler[2:])


@pytest.mark.parametrize("ngram_max", [1, 2])
def test_word_cues_are_learnt(ngram_max):
    result = NBTfidfEncoder(ngram_max).run_task(TASKS["BigramShift"], _task(cue_words), ProtocolParams())
    assert result["acc"] >= 95 and result["devacc"] >= 95 and result["ntest"] == 40


def test_only_bigrams_see_word_order():
    data = _task(word_order, n=(400, 100, 400))
    uni = NBTfidfEncoder(1).run_task(TASKS["BigramShift"], data, ProtocolParams())
    bi = NBTfidfEncoder(2).run_task(TASKS["BigramShift"], data, ProtocolParams())
    assert 35 <= uni["acc"] <= 65  # chance: every sentence has the same bag of cue words
    assert bi["acc"] == 100.0


def test_pair_tasks_are_refused():
    with pytest.raises(ValueError, match="single sentences"):
        NBTfidfEncoder(1).run_task(TASKS["MRPC"], _task(cue_words), ProtocolParams())
