"""J_bi, the bilingual hinge objective of Elgohary & Carpuat 2016 (eq. 1, after Hermann & Blunsom 2014)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

import torch

from sentence_lab.encoders.base import SentenceEncoder
from sentence_lab.objectives.contract import PAIRS, ObjectiveSpec
from sentence_lab.objectives.hinge import PairHinge


class JBi(PairHinge):
    """J_bi (Elgohary & Carpuat 2016, eq. 1): aligned sentences of two languages, one encoder per language
    (``f`` English, evaluated; ``g`` the other), ``k`` random noise segments per side from the opposite side,
    squared Euclidean distance. Hyper-parameters tuned in their section 3.2 over batch {25, 50, 100}, margin
    {1, 10, 100}, l2 {1, 1e-3, ..., 1e-9}, k {1, 5, 10, 15}. At test time an additive encoder's vector is the
    average of the word vectors (section 3.2; ``test_embedding="sum"``: the sum)."""

    spec: ClassVar[ObjectiveSpec] = ObjectiveSpec(PAIRS, ("source", "target"), "val/hinge", "min", "tatoeba_en_es")

    def __init__(self, encoder_factory: Callable[..., SentenceEncoder], vocabs: Mapping | None = None,
                 k: int = 10, margin: float = 1.0, distance: str = "euclidean", l2: float = 1e-5,
                 seed: int = 1234, test_embedding: str = "mean") -> None:
        super().__init__(encoder_factory, False, "random", k, margin, distance, l2, seed, pool="opposite",
                         test_embedding=test_embedding)

    def embed_target(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The other language's vector: ``g``'s, averaged as ``embed`` averages ``f``'s (section 3.2), so both
        languages' vectors live where the hinge put them: the suite scores that side on its language's probing
        tasks and retrieves translations across the two (``sentence_lab.objectives.contract.EmbedsTargetSide``)."""
        return self._at_test(self.g(tokens, lengths), lengths, self.g)
