"""J_bi and J_pa (Elgohary & Carpuat 2016): distances, noise, and the hinge sums by hand."""
from __future__ import annotations

import math

import pytest
import torch

from sentence_lab.objectives.hinge import distance, random_others
from sentence_lab.objectives.jbi import JBi
from sentence_lab.objectives.jpa import JPa
from tests.helpers.toy import one_word_batch, sum_encoder

# Word vectors of ids 4..9 (one-word segments, so a segment's vector is its word's).
ROWS = {4: [0.0, 0.0], 5: [1.0, 0.0], 6: [3.0, 0.0], 7: [0.0, 1.0], 8: [0.0, 2.0], 9: [2.0, 2.0]}


def sq(u, v) -> float:
    return sum((a - b) ** 2 for a, b in zip(u, v))


def test_distances():
    u, v = torch.tensor([[3.0, 0.0]]), torch.tensor([[0.0, 4.0]])
    assert float(distance(u, v, "euclidean")) == 25.0
    assert math.isclose(float(distance(u, torch.tensor([[1.0, 1.0]]), "cosine")), 1 - 1 / math.sqrt(2), rel_tol=1e-6)


def test_random_others_never_pick_the_row_itself():
    idx = random_others(6, 5, torch.Generator().manual_seed(3), torch.device("cpu"))
    for row, picks in enumerate(idx.tolist()):
        assert row not in picks and len(set(picks)) == 5
    with pytest.raises(ValueError, match="batch_size"):
        random_others(3, 3, None, torch.device("cpu"))


def test_jbi_by_hand_with_every_other_pair_as_noise():
    """k = n - 1: the noise is every other pair whatever is drawn, so eq. (1) can be summed by hand."""
    model = JBi(lambda side="source": sum_encoder(ROWS), k=2, margin=1.0, distance="euclidean", l2=0.0)
    a, b = [4, 5, 6], [7, 8, 9]
    out = model(one_word_batch(a, b))
    x1 = [ROWS[i] for i in a]
    x2 = [ROWS[i] for i in b]
    total = 0.0
    for i in range(3):
        pos = sq(x1[i], x2[i])
        for j in range(3):
            if j != i:
                total += max(0.0, 1.0 + pos - sq(x1[i], x2[j])) + max(0.0, 1.0 + pos - sq(x2[i], x1[j]))
    assert math.isclose(float(out["loss"]), total / 3, rel_tol=1e-6)
    assert model.f is not model.g


def test_jbi_adds_half_l2_of_both_embedding_tables():
    model = JBi(lambda side="source": sum_encoder(ROWS), k=1, margin=0.0, distance="euclidean", l2=0.5)
    out = model(one_word_batch([4, 5], [4, 5]))  # aligned segments identical: every hinge term is 0 at margin 0
    squares = sum(v * v for row in ROWS.values() for v in row)
    assert math.isclose(float(out["hinge"]), 0.0, abs_tol=1e-7)
    assert math.isclose(float(out["loss"]), 0.5 / 2 * 2 * squares, rel_tol=1e-6)


def test_jpa_max_takes_the_closest_segment_of_another_pair_from_either_side():
    """Wieting et al. 2016's MAX, which J_pa follows: for each segment, the closest of all the other pairs'
    segments, both sides; the batch is chosen so that for x1 = w4 the closest is on its own side (w5, pair 1's
    side b is w9)."""
    model = JPa(lambda side="source": sum_encoder(ROWS), negatives="max", margin=10.0, distance="euclidean", l2=0.0)
    assert model.f is model.g and model.pool == "both"
    passes = []
    model.f.register_forward_hook(lambda module, args, out: passes.append(len(args[0])))
    a, b = [4, 5, 8], [7, 9, 6]
    out = model(one_word_batch(a, b))
    assert passes == [6]  # the shared encoder reads both sides in one pass
    x1 = [ROWS[i] for i in a]
    x2 = [ROWS[i] for i in b]
    total = 0.0
    for i in range(3):
        pos = sq(x1[i], x2[i])
        others = [x for j in range(3) if j != i for x in (x1[j], x2[j])]
        total += max(0.0, 10.0 + pos - min(sq(x1[i], o) for o in others))
        total += max(0.0, 10.0 + pos - min(sq(x2[i], o) for o in others))
    assert math.isclose(float(out["loss"]), total / 3, rel_tol=1e-6)
    opposite_only = JPa(lambda side="source": sum_encoder(ROWS), negatives="max", margin=10.0, distance="euclidean",
                        l2=0.0, pool="opposite")
    assert not math.isclose(float(opposite_only(one_word_batch(a, b))["loss"]), total / 3, rel_tol=1e-3)


def test_jpa_max_from_the_opposite_side_only_by_name():
    model = JPa(lambda side="source": sum_encoder(ROWS), negatives="max", margin=10.0, distance="euclidean", l2=0.0,
                pool="opposite")
    a, b = [4, 6, 8], [5, 9, 7]
    out = model(one_word_batch(a, b))
    x1 = [ROWS[i] for i in a]
    x2 = [ROWS[i] for i in b]
    total = 0.0
    for i in range(3):
        pos = sq(x1[i], x2[i])
        hardest_b = min(sq(x1[i], x2[j]) for j in range(3) if j != i)
        hardest_a = min(sq(x2[i], x1[j]) for j in range(3) if j != i)
        total += max(0.0, 10.0 + pos - hardest_b) + max(0.0, 10.0 + pos - hardest_a)
    assert math.isclose(float(out["loss"]), total / 3, rel_tol=1e-6)


def test_the_test_time_vector_is_the_average_of_the_word_vectors():
    """Elgohary & Carpuat 2016, section 3.2: trained as sums, sentences are averaged at test time."""
    model = JPa(lambda side="source": sum_encoder(ROWS))
    tokens, lengths = torch.tensor([[5, 6, 9], [7, 0, 0]]), torch.tensor([3, 1])
    expected = torch.tensor([[(1.0 + 3.0 + 2.0) / 3, 2.0 / 3], [0.0, 1.0]])
    torch.testing.assert_close(model.embed(tokens, lengths), expected)
    summed = JBi(lambda side="source": sum_encoder(ROWS), test_embedding="sum")
    torch.testing.assert_close(summed.embed(tokens, lengths), torch.tensor([[6.0, 2.0], [0.0, 1.0]]))


def test_jpa_mix_with_two_pairs_has_one_candidate():
    """With two pairs the only non-aligned segment is both MAX's and random's choice: the sum is known."""
    model = JPa(lambda side="source": sum_encoder(ROWS), negatives="mix", margin=1.0, distance="cosine", l2=0.0,
                seed=7, pool="opposite")
    out = model(one_word_batch([5, 9], [6, 8]))
    cos = lambda u, v: sum(a * b for a, b in zip(u, v)) / math.hypot(*u) / math.hypot(*v)  # noqa: E731
    d = lambda i, j: 1 - cos(ROWS[i], ROWS[j])  # noqa: E731
    total = (max(0, 1 + d(5, 6) - d(5, 8)) + max(0, 1 + d(5, 6) - d(6, 9))
             + max(0, 1 + d(9, 8) - d(9, 6)) + max(0, 1 + d(9, 8) - d(8, 5)))
    assert math.isclose(float(out["loss"]), total / 2, rel_tol=1e-5)


def test_jpa_mix_draws_max_about_half_the_time_under_a_fixed_seed():
    rows = {i: [float(i), float(i * i % 7)] for i in range(4, 16)}
    model = JPa(lambda side="source": sum_encoder(rows), negatives="mix", distance="euclidean", seed=11)
    maxed = JPa(lambda side="source": sum_encoder(rows), negatives="max", distance="euclidean")
    x1 = torch.tensor([rows[i] for i in range(4, 10)])
    x2 = torch.tensor([rows[i] for i in range(10, 16)])
    hardest = maxed.noise(x1, x2)[1]
    agree = sum(int((model.noise(x1, x2)[1] == hardest).all(-1).sum()) for _ in range(200))
    assert 0.5 * 1200 <= agree <= 0.7 * 1200  # p = 0.5 MAX, plus random draws that hit the hardest (1 in 10)
    assert bool((maxed.noise(x1, x2)[1] == hardest).all())


def test_jpa_refuses_bad_settings():
    with pytest.raises(ValueError, match="negatives"):
        JPa(lambda side="source": sum_encoder(ROWS), negatives="hard")
    with pytest.raises(ValueError, match="distance"):
        JPa(lambda side="source": sum_encoder(ROWS), distance="manhattan")
    with pytest.raises(ValueError, match="pool"):
        JPa(lambda side="source": sum_encoder(ROWS), pool="all")
