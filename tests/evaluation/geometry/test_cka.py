"""Linear CKA against a hand computation of Kornblith et al. 2019's formula and its stated properties."""
from __future__ import annotations

import numpy as np
import pytest

from sentence_lab.evaluation.geometry.cka import linear_cka


def by_hand(x: list[list[float]], y: list[list[float]]) -> float:
    """||Y^T X||_F^2 / (||X^T X||_F ||Y^T Y||_F) of the column-centred matrices, in loops."""
    n = len(x)

    def centred(m: list[list[float]]) -> list[list[float]]:
        means = [sum(row[j] for row in m) / n for j in range(len(m[0]))]
        return [[row[j] - means[j] for j in range(len(row))] for row in m]

    def frob_sq_of_product(a: list[list[float]], b: list[list[float]]) -> float:  # ||A^T B||_F^2
        return sum(sum(a[i][p] * b[i][q] for i in range(n)) ** 2 for p in range(len(a[0])) for q in range(len(b[0])))

    cx, cy = centred(x), centred(y)
    return frob_sq_of_product(cy, cx) / (frob_sq_of_product(cx, cx) ** 0.5 * frob_sq_of_product(cy, cy) ** 0.5)


X = [[1.0, 2.0], [0.0, -1.0], [3.0, 0.5], [-2.0, 1.0], [0.5, 0.5]]
Y = [[0.3], [1.0], [-0.7], [2.0], [0.1]]
Z = [[1.0, 0.0, 2.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 3.0, 1.0], [0.0, 1.0, 0.0]]


@pytest.mark.parametrize("a, b", [(X, Y), (X, Z), (Z, Y)])
def test_linear_cka_is_the_papers_formula_computed_by_hand(a, b):
    assert linear_cka(np.array(a), np.array(b)) == pytest.approx(by_hand(a, b), rel=1e-12)
    assert linear_cka(np.array(a), np.array(b)) == pytest.approx(linear_cka(np.array(b), np.array(a)), rel=1e-12)


def test_one_for_the_same_vectors_and_invariant_to_rotation_and_isotropic_scale_not_to_other_scalings():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 16))
    y = np.tanh(x @ rng.normal(size=(16, 8)))
    assert linear_cka(x, x) == pytest.approx(1.0)
    q, _ = np.linalg.qr(rng.normal(size=(16, 16)))
    assert linear_cka(x @ q * 7.5 + 3.0, y) == pytest.approx(linear_cka(x, y), rel=1e-10)  # rotation, scale, shift
    stretched = x * np.r_[np.full(8, 10.0), np.ones(8)]
    assert abs(linear_cka(stretched, y) - linear_cka(x, y)) > 1e-3  # an anisotropic scaling changes it
    assert 0 <= linear_cka(x, rng.normal(size=(200, 8))) < 0.2  # unrelated vectors: near 0


def test_vectors_of_different_rows_are_refused_and_constant_ones_give_nan():
    with pytest.raises(ValueError, match="the same rows"):
        linear_cka(np.ones((5, 2)), np.ones((4, 2)))
    assert np.isnan(linear_cka(np.ones((5, 2)), np.array(X)))
