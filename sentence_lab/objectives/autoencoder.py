"""The autoencoder of the probing paper (Conneau et al. 2018, section 3.2): NMT's sequence to sequence model
(``sentence_lab.objectives.nmt``) regenerating its input."""
from __future__ import annotations

from typing import ClassVar

import torch

from sentence_lab.objectives.contract import SENTENCES, ObjectiveSpec
from sentence_lab.objectives.nmt import Seq2Seq


class AutoEncoder(Seq2Seq):
    """The same model regenerating its input (Conneau et al. 2018, section 3.2), on any monolingual corpus
    (``SENTENCES`` batches; one vocabulary)."""

    spec: ClassVar[ObjectiveSpec] = ObjectiveSpec(SENTENCES, ("source",), "val/bleu", "max", "books")

    @staticmethod
    def _target_side() -> str:
        return "source"

    @staticmethod
    def sides(batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        return batch["tokens"], batch["lengths"], batch["tokens"], batch["lengths"]
