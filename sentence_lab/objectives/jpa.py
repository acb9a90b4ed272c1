"""J_pa, the paraphrase hinge objective of Elgohary & Carpuat 2016 (section 2.2, after Wieting et al. 2016)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

from sentence_lab.encoders.base import SentenceEncoder
from sentence_lab.objectives.contract import PAIRS, ObjectiveSpec
from sentence_lab.objectives.hinge import PairHinge


class JPa(PairHinge):
    """J_pa (Elgohary & Carpuat 2016, section 2.2, after Wieting et al. 2016): monolingual paraphrase pairs, one
    shared encoder, one MAX (the closest segment of another pair, either side: ``pool="both"``) or MIX (MAX
    with p = 0.5, else random) negative per segment; ``distance`` ``euclidean`` (chosen by their tuning for
    monolingual phrases, section 3.2) or ``cosine``. At test time an additive encoder's vector is the average
    of the word vectors (section 3.2). The earlier variant: ``pool=opposite distance=cosine margin=0.4
    test_embedding=sum``."""

    spec: ClassVar[ObjectiveSpec] = ObjectiveSpec(PAIRS, ("source",), "val/hinge", "min", "ppdb2_human")

    def __init__(self, encoder_factory: Callable[..., SentenceEncoder], vocabs: Mapping | None = None,
                 negatives: str = "max", margin: float = 1.0, distance: str = "euclidean", l2: float = 1e-5,
                 seed: int = 1234, pool: str = "both", test_embedding: str = "mean") -> None:
        super().__init__(encoder_factory, True, negatives, 1, margin, distance, l2, seed, pool=pool,
                         test_embedding=test_embedding)
