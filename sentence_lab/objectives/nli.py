"""Natural language inference (Conneau et al. 2017, InferSent, section 3.2; the probing paper's NLI
encoder, section 3.2): one encoder reads premise and hypothesis; an MLP classifies their features."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from sentence_lab.encoders.base import SentenceEncoder, encode_together
from sentence_lab.objectives.contract import LABELLED_PAIRS, ObjectiveSpec, SentenceObjective

NLI_LABELS = ("entailment", "neutral", "contradiction")


def pair_features(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """InferSent's matching features ``[u, v, |u - v|, u * v]`` (Conneau et al. 2017, section 3.2)."""
    return torch.cat([u, v, (u - v).abs(), u * v], dim=1)


class NLI(SentenceObjective):
    """``u = f(premise)``, ``v = f(hypothesis)`` (one pass over both); ``pair_features`` into an MLP with
    ``hidden_dim`` units (InferSent: 512, one hidden layer) and ``n_classes`` outputs; cross-entropy. Embedding:
    ``f(s)``."""

    spec: ClassVar[ObjectiveSpec] = ObjectiveSpec(LABELLED_PAIRS, ("source",), "val/acc", "max", "nli")

    def __init__(self, encoder_factory: Callable[..., SentenceEncoder], vocabs: Mapping | None = None,
                 hidden_dim: int = 512, n_classes: int = 3, dropout: float = 0.0) -> None:
        super().__init__()
        self.f = encoder_factory()
        self.output_dim = self.f.output_dim
        layers: list[nn.Module] = [nn.Dropout(dropout)] if dropout else []
        if hidden_dim:
            layers += [nn.Linear(4 * self.output_dim, hidden_dim), nn.Tanh(), nn.Linear(hidden_dim, n_classes)]
        else:
            layers += [nn.Linear(4 * self.output_dim, n_classes)]
        self.classifier = nn.Sequential(*layers)

    def logits(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        u, v = encode_together(self.f, (batch["a_tokens"], batch["a_lengths"]), (batch["b_tokens"], batch["b_lengths"]))
        return self.classifier(pair_features(u, v))

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        logits = self.logits(batch)
        labels = batch["labels"]
        return {"loss": F.cross_entropy(logits, labels), "acc": (logits.argmax(1) == labels).float().mean()}

    def embed(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.f(tokens, lengths)

