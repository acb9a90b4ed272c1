"""The floor a probing score is read against: the top block of the probing paper's Table 2, computed on the set
itself (Conneau et al. 2018, section 4, "Baselines").

- ``majority``: the most frequent training label, scored on test;
- ``length``: "a linear classifier with sentence length as sole feature" (``encoder=length``'s feature, the
  centred token count, in a multinomial logistic regression fitted to convergence, its inverse regularisation
  chosen on dev; ``encoder=length`` scores the same feature through the suite's own classifier and epoch budget);
- ``nb_uni_tfidf`` / ``nb_bi_tfidf``: "a Naive Bayes classifier using words' tfidf scores as features", and its
  extension to bigrams (``encoders.nb_baselines``, alpha chosen on dev).

A score near these says the set, not the encoder, gives the label away (or that the encoder holds no more than
the words or the length do).
"""
from __future__ import annotations

import time
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from sentence_lab.evaluation.encoders.baselines import LengthEncoder
from sentence_lab.evaluation.encoders.nb_baselines import nb_tfidf_split

FLOOR_ROWS = ("majority", "length", "nb_uni_tfidf", "nb_bi_tfidf")
FLOOR_NAMES = {"majority": "Majority", "length": "Length", "nb_uni_tfidf": "NB-uni-tfidf",
               "nb_bi_tfidf": "NB-bi-tfidf"}
LENGTH_C = (0.01, 1.0, 100.0, 10000.0)

# The paper's rows (Table 2, top block), for the docs and the comparisons that quote them.
PAPER_FLOORS = {
    "majority": {"Length": 20.0, "WordContent": 0.5, "Depth": 17.9, "TopConstituents": 5.0, "BigramShift": 50.0,
                 "Tense": 50.0, "SubjNumber": 50.0, "ObjNumber": 50.0, "OddManOut": 50.0,
                 "CoordinationInversion": 50.0},
    "length": {"Length": 100.0, "WordContent": 0.2, "Depth": 18.1, "TopConstituents": 9.3, "BigramShift": 50.6,
               "Tense": 56.5, "SubjNumber": 50.3, "ObjNumber": 50.1, "OddManOut": 50.2, "CoordinationInversion": 50.0},
    "nb_uni_tfidf": {"Length": 22.7, "WordContent": 97.8, "Depth": 24.1, "TopConstituents": 41.9,
                     "BigramShift": 49.5, "Tense": 77.7, "SubjNumber": 68.9, "ObjNumber": 64.0, "OddManOut": 38.0,
                     "CoordinationInversion": 50.5},
    "nb_bi_tfidf": {"Length": 23.0, "WordContent": 95.0, "Depth": 24.6, "TopConstituents": 53.0,
                    "BigramShift": 63.8, "Tense": 75.9, "SubjNumber": 69.1, "ObjNumber": 65.4, "OddManOut": 39.9,
                    "CoordinationInversion": 55.7},
}

Labelled = tuple[Sequence[str], Any]  # (sentences, labels: a sequence or an array)


def _lengths(sentences: Sequence[str]) -> np.ndarray:
    """The feature of ``encoder=length`` (the token count, centred), scaled by its spread on train below."""
    return LengthEncoder().encode(list(sentences)).astype(np.float64)


def most_frequent(counts: Counter) -> Any:
    """The most frequent label (ties: the first by its text)."""
    return min(counts, key=lambda label: (-counts[label], str(label)))


def majority_accuracy(train_y: Sequence | np.ndarray, test_y: Sequence | np.ndarray) -> float:
    """The most frequent training label's share of ``test_y``, in %."""
    top = most_frequent(Counter(np.asarray(train_y).tolist()))
    return round(100.0 * float(np.mean(np.asarray(test_y) == top)), 2)


def length_accuracy(train: Labelled, dev: Labelled, test: Labelled) -> float:
    """Test accuracy of the length-only linear classifier, C chosen on dev (the first best)."""
    x = {name: _lengths(part[0]) for name, part in (("train", train), ("dev", dev), ("test", test))}
    sd = float(x["train"].std()) or 1.0
    best: tuple[float, float] | None = None
    for c in LENGTH_C:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = LogisticRegression(C=c, max_iter=2000).fit(x["train"] / sd, np.asarray(train[1]))
        devacc = float(np.mean(model.predict(x["dev"] / sd) == np.asarray(dev[1])))
        if best is None or devacc > best[0]:
            best = (devacc, float(np.mean(model.predict(x["test"] / sd) == np.asarray(test[1]))))
    assert best is not None
    return round(100.0 * best[1], 2)


def highest_floor(floors: Mapping[str, Any]) -> tuple[str, float] | None:
    """The highest of a set's floors: (its row's name, its accuracy); None when it has none."""
    scored = [(float(floors[row]), FLOOR_NAMES[row]) for row in FLOOR_ROWS if isinstance(floors.get(row), (int, float))]
    return (max(scored)[1], max(scored)[0]) if scored else None


def probing_floors(train: Labelled, dev: Labelled, test: Labelled) -> dict:
    """The four rows' test accuracies (%) on one task, and the seconds they took."""
    started = time.perf_counter()
    majority = majority_accuracy(train[1], test[1])
    if len(set(np.asarray(train[1]).tolist())) < 2:  # one class: every row is the majority
        return {**{row: majority for row in FLOOR_ROWS}, "seconds": round(time.perf_counter() - started, 2)}
    out: dict = {"majority": majority, "length": length_accuracy(train, dev, test)}
    for name, ngram_max in (("nb_uni_tfidf", 1), ("nb_bi_tfidf", 2)):
        out[name] = round(nb_tfidf_split(ngram_max, list(train[0]), np.asarray(train[1]), list(dev[0]),
                                         np.asarray(dev[1]), list(test[0]), np.asarray(test[1]))[1], 2)
    out["seconds"] = round(time.perf_counter() - started, 2)
    return out
