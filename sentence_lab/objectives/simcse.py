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

import warnings
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import torch
import torch.distributed as dist
import torch.distributed.nn.functional as dist_nn
import torch.nn.functional as F
from torch import nn

from sentence_lab.encoders.base import SentenceEncoder
from sentence_lab.objectives.contract import SENTENCES, TRIPLES, ObjectiveSpec, SentenceObjective, source_side
from sentence_lab.objectives.qt import pair_scores
from sentence_lab.text import PAD_ID

VALIDATION_SEED = 0  # the dropout masks of validation's two views: the same every epoch, training's RNG untouched
FORMS = ("unsupervised", "supervised")


def simcse_loss(anchors: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor | None = None,
                temperature: float = 0.05, first_positive: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 4 (``negatives`` None) or eq. 5 of the paper, averaged over the ``[B, D]`` anchors: row ``i`` classifies
    its positive, row ``first_positive + i`` of ``positives`` (``[N, D]``, N >= B: the batches of every process when
    gathered), among every positive (and every hard negative). Returns the loss and, per row, whether its positive
    scored highest."""
    scores = pair_scores(anchors, positives, "cosine", temperature)
    if negatives is not None:
        scores = torch.cat([scores, pair_scores(anchors, negatives, "cosine", temperature)], dim=1)
    targets = torch.arange(anchors.shape[0], device=anchors.device) + first_positive
    return F.cross_entropy(scores.float(), targets), scores.argmax(1) == targets


def gathered(x: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Every process's rows of ``x`` in rank order, as one tensor through which the gradient reaches each process's
    own rows (``torch.distributed.nn``'s all-gather, whose backward sums the gradients of every process's loss), and
    where this process's rows start; ``(x, 0)`` outside a process group of more than one. Processes may hold
    different numbers of rows (an epoch's last batch): each is padded to the largest for the gather and cut back."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return x, 0
    size = torch.tensor([x.shape[0]], device=x.device)
    sizes = [torch.zeros_like(size) for _ in range(dist.get_world_size())]
    dist.all_gather(sizes, size)
    counts = [int(n) for n in sizes]
    padded = F.pad(x, (0, 0, 0, max(counts) - x.shape[0]))
    with warnings.catch_warnings():  # its successor (_functional_collectives) is private and has no gloo backward
        warnings.filterwarnings("ignore", message=".*all_gather is deprecated", category=FutureWarning)
        parts = dist_nn.all_gather(padded)
    rows = torch.cat([part[:n] for part, n in zip(parts, counts, strict=True)], dim=0)
    return rows, sum(counts[: dist.get_rank()])


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
    """SimCSE with one encoder ``f``; at test time a sentence is ``f(s)`` (no dropout).

    ``form: unsupervised`` (eq. 4). Batch: ``sentences`` (``tokens [B, T]``, ``lengths [B]``; ``doc_ids`` unused),
    e.g. the shipped books: a sentence's two dropout views are the positive pair, the batch's other sentences the
    negatives. Consecutive sentences share a batch as the corpus datamodules cut them; the paper draws its Wikipedia
    sentences at random. Validation classifies the same two-view task with dropout on, under a fixed seed, so that
    its numbers compare across epochs (with dropout off both views would be one vector). Refused without dropout.

    ``form: supervised`` (eq. 5). Batch: ``triples`` (``a_*`` the premise, ``b_*`` its entailment hypothesis, the
    positive, ``c_*`` its contradiction hypothesis, the hard negative), which ``data=nli`` yields when asked
    (``PairsDataModule.yield_triples``); validation is the same task with dropout off.

    ``gather: true`` under DDP: each process's anchors classify their positive among the positives (and negatives)
    of every process's batch, as one batch of them all would (in training; validation keeps each process's own).
    """

    spec: ClassVar[ObjectiveSpec] = ObjectiveSpec(SENTENCES, ("source",), "val/simcse_acc", "max", "books")

    @classmethod
    def spec_for(cls, config: Mapping[str, Any]) -> ObjectiveSpec:
        if config.get("form", "unsupervised") == "supervised":
            return ObjectiveSpec(TRIPLES, ("source",), "val/simcse_acc", "max", "nli")
        return cls.spec

    def __init__(self, encoder_factory: Callable[..., SentenceEncoder], vocabs: Mapping | None = None,
                 temperature: float = 0.05, form: str = "unsupervised", gather: bool = False) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"objective.temperature={temperature}: it must be > 0 (the paper's is 0.05)")
        if form not in FORMS:
            raise ValueError(f"objective.form={form}: use unsupervised (two dropout views of a sentence) or "
                             "supervised (NLI triples, data=nli)")
        self.temperature, self.form, self.gather = float(temperature), form, bool(gather)
        self.f = encoder_factory()
        if form == "unsupervised" and not has_dropout(self.f):
            raise ValueError(f"objective=simcse: the encoder {type(self.f).__name__} has no dropout, so a sentence's "
                             "two views would be one vector and teach nothing: give it some, e.g. encoder.dropout=0.1")
        self.output_dim = self.f.output_dim

    def _loss(self, anchors: torch.Tensor, positives: torch.Tensor,
              negatives: torch.Tensor | None) -> dict[str, torch.Tensor]:
        first = 0
        if self.gather and self.training:
            positives, first = gathered(positives)
            negatives = gathered(negatives)[0] if negatives is not None else None
        loss, correct = simcse_loss(anchors, positives, negatives, self.temperature, first)
        return {"loss": loss, "simcse_acc": correct.float().mean()}

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        tokens, lengths = source_side(batch)
        if self.form == "supervised":  # the three sides in one pass
            sides = [(batch[f"{side}_tokens"], batch[f"{side}_lengths"]) for side in "abc"]
            width = max(t.shape[1] for t, _ in sides)
            vectors = self.f(torch.cat([F.pad(t, (0, width - t.shape[1]), value=PAD_ID) for t, _ in sides]),
                             torch.cat([length for _, length in sides]))
            anchors, positives, negatives = vectors.split(tokens.shape[0])
            return self._loss(anchors, positives, negatives)
        # one pass over the batch twice over: each row draws its own dropout masks, as two passes would
        both = self.f(torch.cat([tokens, tokens]), torch.cat([lengths, lengths]))
        anchors, positives = both.split(tokens.shape[0])
        return self._loss(anchors, positives, None)

    def evaluation_step(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Unsupervised: the training task with dropout on, its masks drawn from ``VALIDATION_SEED``, the training RNG
        left as it was (``torch.random.fork_rng``). Supervised: the training task as the model is (dropout off)."""
        if self.form == "supervised":
            return self.forward(batch)
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
