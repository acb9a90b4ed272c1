"""How well a cheap protocol (a curve preset) orders checkpoints as the full protocol does.

Checkpoints are compared only inside a stratum (the same objective and epoch, several training seeds), so that
epoch 0 against a trained checkpoint, or one objective against another, cannot carry the agreement: Kendall's tau-b
over the pairs inside each stratum, the share of the pairs the full protocol's paired test calls different that the
cheap protocol orders the same way, and the largest absolute difference of a checkpoint's two scores.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations

import numpy as np

TAU_GOAL = 0.8
SAME_ORDER_GOAL = 0.9


def within_pairs(strata: Sequence[Hashable]) -> list[tuple[int, int]]:
    """Every pair of positions (i < j) whose checkpoints are in the same stratum."""
    groups: dict[Hashable, list[int]] = {}
    for i, stratum in enumerate(strata):
        groups.setdefault(stratum, []).append(i)
    return [pair for members in groups.values() for pair in combinations(members, 2)]


def stratified_tau(full: Sequence[float], cheap: Sequence[float], strata: Sequence[Hashable]) -> float:
    """Kendall's tau-b over the pairs inside each stratum (concordant minus discordant pairs over the geometric mean of
    the pairs not tied in each ranking); with one stratum it is scipy's ``kendalltau``. NaN without untied pairs."""
    pairs = within_pairs(strata)
    concordant = discordant = tied_full = tied_cheap = 0
    for i, j in pairs:
        a, b = np.sign(full[i] - full[j]), np.sign(cheap[i] - cheap[j])
        tied_full += a == 0
        tied_cheap += b == 0
        concordant += a * b > 0
        discordant += a * b < 0
    denominator = math.sqrt((len(pairs) - tied_full) * (len(pairs) - tied_cheap))
    return (concordant - discordant) / denominator if denominator else float("nan")


@dataclass
class Agreement:
    """One task's agreement between the full protocol and a cheap one over a set of checkpoints."""

    task: str
    checkpoints: int
    pairs: int  # pairs inside a stratum
    tau: float  # stratified Kendall's tau-b
    different: int  # pairs inside a stratum the full protocol's paired test calls different
    same_order: int  # of those, the pairs the cheap protocol orders the same way
    max_abs_difference: float  # the largest |full - cheap| of a checkpoint (the task's main-score scale)

    @property
    def same_order_share(self) -> float:
        return self.same_order / self.different if self.different else float("nan")

    @property
    def meets_goal(self) -> bool:
        """Tau at least 0.8 and at least 90% of the pairs called different ordered the same way (no such pair: the
        tau alone)."""
        share_ok = self.different == 0 or self.same_order_share >= SAME_ORDER_GOAL
        return bool(self.tau >= TAU_GOAL and share_ok)

    def as_dict(self) -> dict:
        return {**asdict(self), "same_order_share": self.same_order_share, "meets_goal": self.meets_goal}


def agreement(task: str, full: Sequence[float], cheap: Sequence[float], strata: Sequence[Hashable],
              different: Sequence[tuple[int, int]]) -> Agreement:
    """``full[i]`` and ``cheap[i]``: checkpoint i's score under each protocol; ``strata[i]`` its stratum;
    ``different``: the pairs (inside a stratum) the full protocol's paired test calls different."""
    if not len(full) == len(cheap) == len(strata):
        raise ValueError(f"{task}: {len(full)} full scores, {len(cheap)} cheap ones, {len(strata)} strata")
    same = sum(np.sign(full[i] - full[j]) == np.sign(cheap[i] - cheap[j]) for i, j in different)
    gaps = np.abs(np.asarray(full, dtype=float) - np.asarray(cheap, dtype=float))
    return Agreement(task, len(full), len(within_pairs(strata)), stratified_tau(full, cheap, strata),
                     len(different), int(same), float(gaps.max()) if len(gaps) else float("nan"))
