"""Translation retrieval's error rates: cosine and the ratio margin of Artetxe & Schwenk (2019, section 3.1),
against a transcription of the formula, and the baselines."""
import numpy as np
import pytest

from sentence_lab.evaluation.languages.retrieval import (
    char_ngram_cosines,
    cosines,
    error_rates,
    error_rates_of,
    margins,
    random_vectors,
)

# Queries 0 and 1 are drawn to candidate 2, a "hub" close to everything: the cosine errs, the margin does not.
HUB = np.array([[0.9, 0.1, 0.95],
                [0.1, 0.9, 0.95],
                [0.2, 0.2, 0.96]])


def margin_by_the_paper(sim: np.ndarray, k: int) -> np.ndarray:
    """margin(x, y) = cos(x, y) / (sum_{z in NN_k(x)} cos(x, z) / 2k + sum_{v in NN_k(y)} cos(y, v) / 2k)."""
    n, m = sim.shape
    out = np.zeros_like(sim)
    for i in range(n):
        for j in range(m):
            nn_x = sorted(sim[i, :], reverse=True)[:k]
            nn_y = sorted(sim[:, j], reverse=True)[:k]
            out[i, j] = sim[i, j] / (sum(nn_x) / (2 * k) + sum(nn_y) / (2 * k))
    return out


def test_the_margin_is_the_papers():
    rng = np.random.default_rng(0)
    sim = cosines(rng.standard_normal((7, 5)), rng.standard_normal((7, 5)))
    for k in (1, 2, 4):
        np.testing.assert_allclose(margins(sim, k), margin_by_the_paper(sim, k), rtol=1e-12)
    np.testing.assert_allclose(margins(HUB, 2)[0], [0.9 / 0.7375, 0.1 / 0.7375, 0.95 / 0.94])


def test_the_margin_stops_a_hub_winning_where_the_cosine_lets_it():
    rates = error_rates_of(HUB, k=2)
    assert rates["cosine x->y"] == pytest.approx(200 / 3) and rates["margin x->y"] == 0.0
    assert rates["cosine y->x"] == 0.0  # each candidate, as a query, finds its own


def test_identical_sides_find_everything_and_a_shift_nothing():
    x = np.eye(5) + 0.01
    assert set(error_rates(x, x).values()) == {0.0}
    assert set(error_rates(x, np.roll(x, 1, axis=0)).values()) == {100.0}
    tie = error_rates(np.ones((3, 2)), np.ones((3, 2)))
    assert set(tie.values()) == {100.0}  # every candidate ties: nothing is found
    with pytest.raises(ValueError, match="as many translations as sentences"):
        error_rates(x, x[:3])


def test_the_baselines():
    x, y = random_vectors(500, 64, seed=1)
    assert error_rates(x, y)["cosine x->y"] > 97.0  # about 1 - 1/n
    sources = ["Paris is in France .", "Barack Obama visited Berlin in 2009 .", "The cat sleeps ."]
    targets = ["Paris est en France .", "Barack Obama a visité Berlin en 2009 .", "Le chat dort ."]
    rates = error_rates_of(char_ngram_cosines(sources, targets))
    assert rates["cosine x->y"] == 0.0 and rates["cosine y->x"] == 0.0  # names, numbers and cognates carry it
