"""Translation pairs held out for retrieval, and training pairs without them.

Tatoeba repeats sentences (``Go.`` has several translations, a translation several sources), so a retrieval test
drawn from it at random would hold queries with more than one right answer and sentences that training also saw.
The held-out pairs are drawn from the pairs whose two sides each occur in no other pair (compared case- and
space-insensitively), so every query has exactly one translation among the candidates; training then drops every
pair that shares a sentence, on either side, with a held-out pair. Both steps are deterministic in the seed, so
the suite and a training run that share a seed and a file hold out the same pairs.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

Pair = tuple[str, str]
# The draw's seed, the same for the suite and every training run whatever their own seeds: a model trained with
# any seed never saw the pairs it is tested on.
RETRIEVAL_SEED = 1111


def normalise(sentence: str) -> str:
    """The form two sentences are compared in: case-folded, runs of spaces made one."""
    return " ".join(sentence.split()).casefold()


@dataclass(frozen=True)
class HeldOut:
    """Held-out pairs (in the file's order) and their sentences on each side, normalised."""

    pairs: list[Pair]
    sources: frozenset[str]
    targets: frozenset[str]
    candidates: int  # pairs whose two sides occur in no other pair: what the draw was made from
    unique_pairs: int  # distinct pairs in the file

    def excludes(self, pair: Pair) -> bool:
        """Whether a training pair shares a sentence with the held-out pairs."""
        return normalise(pair[0]) in self.sources or normalise(pair[1]) in self.targets


def hold_out(pairs: Sequence[Pair], size: int, seed: int) -> HeldOut:
    """``size`` pairs, each side occurring in no other pair, drawn with ``seed``; too few such pairs is refused in
    one line naming the count."""
    seen: set[Pair] = set()
    unique: list[Pair] = []
    for a, b in pairs:
        key = (normalise(a), normalise(b))
        if key[0] and key[1] and key not in seen:
            seen.add(key)
            unique.append((a, b))
    sources = Counter(normalise(a) for a, _ in unique)
    targets = Counter(normalise(b) for _, b in unique)
    candidates = [i for i, (a, b) in enumerate(unique) if sources[normalise(a)] == 1 and targets[normalise(b)] == 1]
    if len(candidates) < size:
        raise ValueError(f"only {len(candidates)} pairs have both sides unique, against {size} to hold out: lower "
                         "the held-out size or give a larger file")
    chosen = np.sort(np.random.default_rng(seed).choice(np.asarray(candidates), size=size, replace=False))
    held = [unique[i] for i in chosen.tolist()]
    return HeldOut(held, frozenset(normalise(a) for a, _ in held), frozenset(normalise(b) for _, b in held),
                   len(candidates), len(unique))


def without_held_out(pairs: Iterable[Pair], held: HeldOut) -> list[Pair]:
    """``pairs`` less every pair that shares a sentence, on either side, with a held-out pair."""
    return [pair for pair in pairs if not held.excludes(pair)]
