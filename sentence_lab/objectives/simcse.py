"""SimCSE (Gao, Yao and Chen 2021, "SimCSE: Simple Contrastive Learning of Sentence Embeddings"): in-batch
contrastive learning of sentence vectors, Quick-Thoughts' classification over the batch with a sentence's own second
view as its positive.

Unsupervised (section 3): every sentence of the batch goes through the encoder twice, each time with its own dropout
masks, ``h_i`` and ``h_i^+``; with cosine similarity ``sim`` and temperature ``tau`` (0.05 in the paper),

    l_i = -log( exp(sim(h_i, h_i^+) / tau) / sum_j exp(sim(h_i, h_j^+) / tau) ),      j over the batch   (eq. 4)

and, with a hard negative ``h_i^-`` for each sentence (section 4: an NLI premise, its entailment hypothesis as the
positive and its contradiction hypothesis as the negative),

    l_i = -log( exp(sim(h_i, h_i^+) / tau) / sum_j (exp(sim(h_i, h_j^+) / tau) + exp(sim(h_i, h_j^-) / tau)) ) (eq. 5).

Departs from the paper in one place: the sentence vector is the encoder's own (its pooling), with no MLP over it in
training, as sentence-transformers' recipe (MultipleNegativesRankingLoss over (s, s) pairs) trains it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from sentence_lab.encoders.base import SentenceEncoder
from sentence_lab.objectives.contract import SENTENCES, ObjectiveSpec, SentenceObjective, source_side
from sentence_lab.objectives.qt import pair_scores

VALIDATION_SEED = 0  # the dropout masks of validation's two views: the same every epoch, training's RNG untouched


def simcse_loss(anchors: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor | None = None,
                temperature: float = 0.05) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 4 (``negatives`` None) or eq. 5 of the paper, averaged over the ``[B, D]`` anchors: row ``i`` classifies
    its positive ``i`` among every positive of the batch (and every hard negative). Returns the loss and, per row,
    whether its positive scored highest."""
    scores = pair_scores(anchors, positives, "cosine", temperature)
    if negatives is not None:
        scores = torch.cat([scores, pair_scores(anchors, negatives, "cosine", temperature)], dim=1)
    targets = torch.arange(anchors.shape[0], device=anchors.device)
    return F.cross_entropy(scores.float(), targets), scores.argmax(1) == targets


def has_dropout(module: nn.Module) -> bool:
    """Whether ``module`` in training draws dropout masks anywhere: a ``Dropout`` layer, a stacked RNN's dropout
    between layers, or attention dropout (a rate kept as a number, as ``encoders.transformer`` keeps it)."""
    for m in module.modules():
        if isinstance(m, nn.modules.dropout._DropoutNd) and m.p > 0:
            return True
        if isinstance(m, nn.RNNBase) and m.dropout > 0 and m.num_layers > 1:
            return True
        if float(getattr(m, "attention_dropout", 0.0) or 0.0) > 0:
            return True
    return False


class SimCSE(SentenceObjective):
    """Unsupervised SimCSE: one encoder ``f``, a sentence's two dropout views as the positive pair, the batch's
    other sentences as the negatives. At test time a sentence is ``f(s)`` (no dropout).

    Batch: ``sentences`` (``tokens [B, T]``, ``lengths [B]``; ``doc_ids`` unused), e.g. the shipped books. Consecutive
    sentences share a batch as the corpus datamodules cut them; the paper draws its Wikipedia sentences at random.
    Validation classifies the same two-view task with dropout on, under a fixed seed, so that its numbers compare
    across epochs (with dropout off both views would be one vector).
    """

    spec: ClassVar[ObjectiveSpec] = ObjectiveSpec(SENTENCES, ("source",), "val/simcse_acc", "max", "books")

    def __init__(self, encoder_factory: Callable[..., SentenceEncoder], vocabs: Mapping | None = None,
                 temperature: float = 0.05) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"objective.temperature={temperature}: it must be > 0 (the paper's is 0.05)")
        self.temperature = float(temperature)
        self.f = encoder_factory()
        if not has_dropout(self.f):
            raise ValueError(f"objective=simcse: the encoder {type(self.f).__name__} has no dropout, so a sentence's "
                             "two views would be one vector and teach nothing: give it some, e.g. encoder.dropout=0.1")
        self.output_dim = self.f.output_dim

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        tokens, lengths = source_side(batch)
        # one pass over the batch twice over: each row draws its own dropout masks, as two passes would
        both = self.f(torch.cat([tokens, tokens]), torch.cat([lengths, lengths]))
        anchors, positives = both.split(tokens.shape[0])
        loss, correct = simcse_loss(anchors, positives, temperature=self.temperature)
        return {"loss": loss, "simcse_acc": correct.float().mean()}

    def evaluation_step(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The training task with dropout on, its masks drawn from ``VALIDATION_SEED``, the training RNG left as it
        was (``torch.random.fork_rng``)."""
        device = source_side(batch)[0].device
        was_training = self.f.training
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(VALIDATION_SEED)
            self.f.train()
            try:
                return self.forward(batch)
            finally:
                self.f.train(was_training)

    def embed(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.f(tokens, lengths)
