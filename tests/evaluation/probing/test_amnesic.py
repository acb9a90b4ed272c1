"""INLP removes what a linear probe reads, and no more than it must; the control removes as many random directions."""
import numpy as np

from sentence_lab.evaluation.probing.amnesic import inlp, probe_accuracy, random_nullspace


def _property_in_two_directions(n: int = 3000, dim: int = 20, seed: int = 0):
    """Labels written (noisily) along two directions of 20; a second property along another one."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    other = rng.integers(0, 2, n)
    x = rng.standard_normal((n, dim))
    x[:, 0] += 2.0 * (2 * y - 1)
    x[:, 1] += 1.0 * (2 * y - 1)
    x[:, 5] += 2.0 * (2 * other - 1)
    return x, y, other


def test_inlp_brings_the_probe_to_majority_and_spares_another_property():
    x, y, other = _property_in_two_directions()
    tr, dev, te = slice(0, 2000), slice(2000, 2500), slice(2500, 3000)
    assert probe_accuracy(x[tr], y[tr], x[te], y[te]) > 90
    removed = inlp(x[tr], y[tr], x[dev], y[dev])
    assert removed.removed and removed.dev_accuracy[0] > 90 and removed.dev_accuracy[-1] <= removed.majority + 2
    assert 1 <= removed.directions <= 6  # a binary probe removes one direction an iteration
    p = removed.projection
    assert np.allclose(p, p.T) and np.allclose(p @ p, p)  # an orthogonal projection
    assert np.linalg.matrix_rank(p) == 20 - removed.directions
    after = probe_accuracy(x[tr] @ p, y[tr], x[te] @ p, y[te])
    assert after < 60  # held-out test: the property is gone there too
    assert probe_accuracy(x[tr] @ p, other[tr], x[te] @ p, other[te]) > 90  # the other property stays


def test_the_control_removes_as_many_random_directions_and_leaves_the_property():
    x, y, _ = _property_in_two_directions()
    control = random_nullspace(20, 3, seed=1)
    assert np.linalg.matrix_rank(control) == 17 and np.allclose(control @ control, control)
    before = probe_accuracy(x[:2000], y[:2000], x[2500:], y[2500:])
    assert abs(probe_accuracy(x[:2000] @ control, y[:2000], x[2500:] @ control, y[2500:]) - before) < 5


def test_a_property_no_probe_reads_removes_nothing():
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((1200, 10)), rng.integers(0, 2, 1200)
    removed = inlp(x[:1000], y[:1000], x[1000:], y[1000:])
    assert removed.directions == 0 and removed.iterations == 0 and np.allclose(removed.projection, np.eye(10))


def test_many_classes_remove_a_direction_a_class_an_iteration():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 4, 4000)
    x = rng.standard_normal((4000, 30))
    x[np.arange(4000), y] += 3.0  # class k along direction k
    removed = inlp(x[:3000], y[:3000], x[3000:], y[3000:])
    assert removed.removed and removed.directions >= 3  # the four class directions span three (or four) dimensions
