"""Alignment and uniformity (Wang and Isola 2020) against hand computations on a few vectors."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sentence_lab.evaluation.geometry.alignment import alignment, uniformity


def test_alignment_is_the_mean_squared_distance_of_the_normalised_pairs():
    u = np.array([[3.0, 0.0], [0.0, 2.0]])
    v = np.array([[0.0, 5.0], [0.0, 1.0]])  # pair 1 at 90 degrees (||a-b||^2 = 2), pair 2 the same direction (0)
    assert alignment(u, v) == pytest.approx((2.0 + 0.0) / 2)
    assert alignment(u, v, alpha=1.0) == pytest.approx((math.sqrt(2.0) + 0.0) / 2)
    with pytest.raises(ValueError, match="positive pairs"):
        alignment(u, v[:1])


def test_uniformity_is_the_log_mean_gaussian_potential_over_distinct_pairs():
    x = np.array([[1.0, 0.0], [-2.0, 0.0], [0.0, 4.0]])  # unit: e1, -e1, e2
    distances = [4.0, 2.0, 2.0]  # squared: (e1, -e1), (e1, e2), (-e1, e2)
    assert uniformity(x) == pytest.approx(math.log(sum(math.exp(-2 * d) for d in distances) / 3))
    assert uniformity(np.ones((4, 3))) == pytest.approx(0.0)  # one point: the worst uniformity
    spread = np.random.default_rng(0).normal(size=(500, 16))
    assert uniformity(spread) < uniformity(spread + 3.0)  # a cluster off the origin is less uniform
    with pytest.raises(ValueError, match="at least two"):
        uniformity(np.ones((1, 3)))
