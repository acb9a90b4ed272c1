"""Quick-Thoughts (Logeswaran & Lee 2018): classify which in-batch sentences are a sentence's context."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

import torch
import torch.nn.functional as F

from sentence_lab.encoders.base import SentenceEncoder, layers_of
from sentence_lab.objectives.contract import SENTENCES, ObjectiveSpec, SentenceObjective


def context_targets(doc_ids: torch.Tensor, context_size: int = 3) -> torch.Tensor:
    """Row ``i`` spreads probability uniformly over its neighbours within the window.

    ``context_size`` counts the sentence itself (3: previous and next). Neighbours must lie in
    the same document; a row without any neighbour is all zeros (and is left out of the loss).
    """
    if context_size < 3 or context_size % 2 == 0:
        raise ValueError(f"context_size={context_size}: use an odd size >= 3 (3 = previous and next sentence)")
    n = doc_ids.shape[0]
    idx = torch.arange(n, device=doc_ids.device)
    offset = idx[None, :] - idx[:, None]
    window = (context_size - 1) // 2
    near = (offset.abs() <= window) & (offset != 0) & (doc_ids[None, :] == doc_ids[:, None])
    targets = near.float()
    return targets / targets.sum(1, keepdim=True).clamp(min=1.0)


def qt_loss(scores: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax cross-entropy of each row of ``scores`` (own column excluded) against ``targets``.

    Returns the mean loss over rows that have a neighbour, and per-row correctness of the argmax.
    """
    diag = torch.eye(scores.shape[0], dtype=torch.bool, device=scores.device)
    scores = scores.masked_fill(diag, float("-inf"))
    log_probs = F.log_softmax(scores, dim=1)
    per_row = -torch.where(targets > 0, targets * log_probs, torch.zeros_like(log_probs)).sum(1)
    has_context = targets.sum(1) > 0
    # A batch where no sentence has a neighbour (every sentence its own document) contributes a zero
    # loss that still depends on the scores, never NaN (which would poison epoch means and monitors).
    n_rows = has_context.sum().clamp(min=1)
    loss = per_row.masked_fill(~has_context, 0.0).sum() / n_rows + 0.0 * scores.masked_fill(diag, 0.0).sum()
    correct = targets.gather(1, scores.argmax(1, keepdim=True)).squeeze(1) > 0
    return loss, correct[has_context]


SIMILARITIES = ("dot", "cosine")


def pair_scores(u: torch.Tensor, v: torch.Tensor, similarity: str = "dot", temperature: float = 1.0) -> torch.Tensor:
    """``[B, B]`` scores of every (u_i, v_j): the inner product (the paper, section 3), or the cosine
    divided by ``temperature`` (a contrastive-learning variant that keeps vectors on the sphere)."""
    if similarity == "cosine":
        return F.normalize(u, dim=1) @ F.normalize(v, dim=1).T / temperature
    return u @ v.T


class QuickThoughts(SentenceObjective):
    """Two encoders f and g (or one shared); scores are f(s_i) . g(s_j) over the batch.

    At test time a sentence is ``[f(s), g(s)]`` (just ``f(s)`` when shared). ``similarity`` is
    ``dot`` (Logeswaran & Lee 2018, section 3) or ``cosine`` with a ``temperature``.
    """

    spec: ClassVar[ObjectiveSpec] = ObjectiveSpec(SENTENCES, ("source",), "val/context_acc", "max", "books")

    def __init__(self, encoder_factory: Callable[..., SentenceEncoder], vocabs: Mapping | None = None,
                 context_size: int = 3, shared_encoder: bool = False, similarity: str = "dot",
                 temperature: float = 1.0) -> None:
        super().__init__()
        if similarity not in SIMILARITIES:
            raise ValueError(f"unknown objective.similarity {similarity!r}: use one of {SIMILARITIES}")
        if temperature <= 0:
            raise ValueError(f"objective.temperature={temperature}: it must be > 0")
        self.similarity, self.temperature = similarity, float(temperature)
        self.context_size = context_size
        self.f = encoder_factory()
        self.g = self.f if shared_encoder else encoder_factory()
        self.shared_encoder = shared_encoder
        self.output_dim = self.f.output_dim * (1 if shared_encoder else 2)

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        tokens, lengths = batch["tokens"], batch["lengths"]
        u = self.f(tokens, lengths)
        v = u if self.shared_encoder else self.g(tokens, lengths)
        targets = context_targets(batch["doc_ids"], self.context_size)
        loss, correct = qt_loss(pair_scores(u, v, self.similarity, self.temperature), targets)
        acc = correct.float().mean() if correct.numel() else loss.new_zeros(())
        return {"loss": loss, "context_acc": acc}

    def embed(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        u = self.f(tokens, lengths)
        return u if self.shared_encoder else torch.cat([u, self.g(tokens, lengths)], dim=1)

    def embed_layers(self, tokens: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        """``embed`` per layer: layer k of f (and of g, concatenated, as ``embed`` joins their tops)."""
        f_layers = layers_of(self.f, tokens, lengths)
        if self.shared_encoder:
            return f_layers
        return [torch.cat([u, v], dim=1) for u, v in zip(f_layers, layers_of(self.g, tokens, lengths))]
