"""NLI pairs regrouped as (premise, entailment, contradiction) triples: supervised SimCSE's batches (``TRIPLES``)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.utils.data import Dataset

from sentence_lab.text.padding import pad_batch


@dataclass(frozen=True)
class Grouped:
    """The triples of one split and what did not fit into one: ``premises_skipped`` premises lacked an entailment
    or a contradiction hypothesis; ``hypotheses_unpaired`` hypotheses of kept premises had no partner left."""

    anchors: list[list[str]]
    positives: list[list[str]]
    negatives: list[list[str]]
    premises_skipped: int
    hypotheses_unpaired: int


def group_triples(premises: Sequence[list[str]], hypotheses: Sequence[list[str]], labels: Sequence[str],
                  positive: str = "entailment", negative: str = "contradiction") -> Grouped:
    """Pair each premise's ``positive`` hypotheses with its ``negative`` ones in file order, one triple per pair
    (``min`` of the two counts), premises in order of first appearance; a premise is the same premise when its
    tokens are. Other labels (neutral) are not read."""
    by_premise: dict[tuple[str, ...], tuple[list[str], list[list[str]], list[list[str]]]] = {}
    for premise, hypothesis, label in zip(premises, hypotheses, labels, strict=True):
        if label not in (positive, negative):
            continue
        _, pos, neg = by_premise.setdefault(tuple(premise), (list(premise), [], []))
        (pos if label == positive else neg).append(list(hypothesis))
    anchors, positives, negatives = [], [], []
    skipped = unpaired = 0
    for premise, pos, neg in by_premise.values():
        if not pos or not neg:
            skipped += 1
            continue
        k = min(len(pos), len(neg))
        unpaired += len(pos) + len(neg) - 2 * k
        anchors += [premise] * k
        positives += pos[:k]
        negatives += neg[:k]
    return Grouped(anchors, positives, negatives, skipped, unpaired)


class TokenizedTriples(Dataset):
    """Triples as id lists; item ``i`` is ``(anchor_ids, positive_ids, negative_ids)``."""

    def __init__(self, a: list[list[int]], b: list[list[int]], c: list[list[int]]) -> None:
        self.a, self.b, self.c = a, b, c

    def __len__(self) -> int:
        return len(self.a)

    def __getitem__(self, i: int) -> tuple[list[int], list[int], list[int]]:
        return self.a[i], self.b[i], self.c[i]


def collate_triples(items: Sequence[tuple[list[int], list[int], list[int]]]) -> dict[str, torch.Tensor]:
    batch = {}
    for k, side in enumerate("abc"):
        batch[f"{side}_tokens"], batch[f"{side}_lengths"] = pad_batch([item[k] for item in items])
    return batch
