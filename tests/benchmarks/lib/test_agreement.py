"""The agreement of a cheap protocol with the full one: tau inside strata, pairs called different, goals."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from lib.agreement import agreement, stratified_tau, within_pairs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_stratum_is_scipys_tau_b_ties_included(seed):
    rng = np.random.default_rng(seed)
    full = rng.integers(0, 5, size=12).astype(float)  # many ties
    cheap = full + rng.integers(-2, 3, size=12)
    assert stratified_tau(full, cheap, ["a"] * 12) == pytest.approx(kendalltau(full, cheap).statistic)


def test_pairs_across_strata_do_not_count():
    # inside each stratum the cheap protocol orders as the full one; across strata it is reversed
    full = [1.0, 2.0, 3.0, 10.0, 11.0, 12.0]
    cheap = [11.0, 12.0, 13.0, 1.0, 2.0, 3.0]
    strata = ["epoch 1"] * 3 + ["epoch 2"] * 3
    assert within_pairs(strata) == [(0, 1), (0, 2), (1, 2), (3, 4), (3, 5), (4, 5)]
    assert stratified_tau(full, cheap, strata) == 1.0
    assert kendalltau(full, cheap).statistic < 0  # pooled, the strata would carry it the other way


def test_by_hand_three_seeds_two_strata():
    full = [70.0, 71.0, 72.0, 50.0, 52.0, 51.0]
    cheap = [69.0, 72.0, 71.0, 49.0, 53.0, 52.5]
    strata = [("qt", 1)] * 3 + [("nli", 1)] * 3
    # stratum 1: (0,1) +, (0,2) +, (1,2) -; stratum 2: (3,4) +, (3,5) +, (4,5) +  -> 5 concordant, 1 discordant
    result = agreement("Length", full, cheap, strata, different=[(0, 2), (1, 2), (3, 4)])
    assert result.tau == pytest.approx((5 - 1) / 6)
    assert (result.pairs, result.different, result.same_order) == (6, 3, 2)
    assert result.same_order_share == pytest.approx(2 / 3)
    assert result.max_abs_difference == pytest.approx(1.5)
    assert not result.meets_goal  # tau 0.67 < 0.8


def test_goal_needs_both_tau_and_the_share():
    full, strata = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], ["s"] * 6
    cheap = [1.0, 2.0, 3.0, 4.0, 6.0, 5.0]  # one swapped pair of 15: tau 13/15
    assert agreement("T", full, cheap, strata, different=[(0, 5), (1, 4)]).meets_goal
    swapped = agreement("T", full, cheap, strata, different=[(4, 5)])  # the one pair called different, swapped
    assert swapped.tau == pytest.approx(13 / 15) and swapped.same_order_share == 0.0 and not swapped.meets_goal
    assert agreement("T", full, cheap, strata, different=[]).meets_goal  # no pair called different: tau alone


def test_no_untied_pair_gives_nan_and_misses_the_goal():
    result = agreement("T", [1.0, 1.0], [2.0, 3.0], ["s", "s"], different=[])
    assert np.isnan(result.tau) and not result.meets_goal
    with pytest.raises(ValueError, match="3 full scores, 2 cheap ones"):
        agreement("T", [1.0, 2.0, 3.0], [1.0, 2.0], ["s"] * 3, different=[])
