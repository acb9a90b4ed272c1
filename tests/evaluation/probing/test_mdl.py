"""The online code (Voita & Titov 2020, section 2.2): its block boundaries and its arithmetic by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sentence_lab.evaluation.probing.mdl import block_ends, codelength


def test_block_ends_are_the_papers_fractions():
    assert block_ends(10000) == [10, 20, 40, 80, 160, 320, 625, 1250, 2500, 5000, 10000]
    assert block_ends(100) == [1, 3, 6, 12, 25, 50, 100]  # tiny sets: the first block holds one example


def test_two_blocks_with_a_fixed_probe_by_hand():
    labels = np.array([0, 1, 1, 0])  # K = 2: the first two labels cost 1 bit each (uniform code)
    # the probe trained on the first block gives p(1 | x3) = 0.75 and p(0 | x4) = 0.25
    out = codelength(labels, 2, [2, 4], [np.log([0.75, 0.25])])
    online = 2 * 1.0 + (-math.log2(0.75)) + (-math.log2(0.25))  # 2 + 0.415 + 2 = 4.415 bits
    assert out["online_kbits"] == pytest.approx(online / 1000, abs=1e-7)
    assert out["uniform_kbits"] == pytest.approx(4 / 1000) and out["compression"] == pytest.approx(4 / online, abs=1e-4)
    assert out["block_kbits"] == [0.002, pytest.approx((online - 2) / 1000)]


def test_a_wrong_number_of_blocks_is_refused():
    with pytest.raises(ValueError, match="3 blocks need 2 arrays"):
        codelength(np.zeros(6, dtype=int), 2, [2, 4, 6], [np.zeros(2)])
