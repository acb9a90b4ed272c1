"""Skip-thought (Kiros et al. 2015, section 2): a sentence's vector conditions GRU decoders that generate
the previous and the next sentence."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar, cast

import torch
from torch import nn

from sentence_lab.encoders.base import SentenceEncoder
from sentence_lab.objectives.contract import SENTENCES, ObjectiveSpec, SentenceObjective
from sentence_lab.objectives.decoders import GRUDecoder, check_output_bias, token_mean

NEIGHBOURS = {"previous": -1, "current": 0, "next": 1}


def neighbour_rows(doc_ids: torch.Tensor, offset: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows ``i`` of a batch of consecutive sentences whose sentence ``i + offset`` is in the batch and in the
    same document, and those neighbours' rows."""
    rows = torch.arange(doc_ids.shape[0], device=doc_ids.device)
    other = rows + offset
    inside = (other >= 0) & (other < doc_ids.shape[0])
    rows, other = rows[inside], other[inside]
    same = doc_ids[rows] == doc_ids[other]
    return rows[same], other[same]


def centre_by_document(vectors: torch.Tensor, doc_ids: torch.Tensor) -> torch.Tensor:
    """Each row minus the mean of the batch's rows from its document. The mean is not detached, so no gradient
    moves every sentence of a document the same way."""
    _, groups = torch.unique(doc_ids, return_inverse=True)
    n_groups = int(groups.max()) + 1
    sums = vectors.new_zeros((n_groups, vectors.shape[1])).index_add_(0, groups, vectors)
    counts = torch.bincount(groups, minlength=n_groups).to(vectors.dtype).unsqueeze(1)
    return vectors - (sums / counts)[groups]


class SkipThought(SentenceObjective):
    """Encoder ``f``; one decoder per entry of ``targets`` (``previous``, ``next``: Kiros et al.; ``[next]``
    alone: Tang et al. 2017, which the probing paper trains; ``current`` adds a decoder that regenerates the
    sentence itself, as Hill et al. 2016's FastSent+AE adds the sentence's own words to FastSent's targets).
    Batches are consecutive sentences (``SENTENCES``), so each sentence's neighbours are the rows beside it;
    a sentence without a neighbour
    in its document contributes no term. Loss: token cross-entropy over the decoder vocabulary (its
    ``decoder_vocab_size`` most frequent words; rarer targets are ``<unk>``), averaged over real target
    tokens (``</s>`` included); padding never counts. Embedding: ``f(s)``. ``condition_norm``,
    ``word_dropout``, ``read_words`` and ``output_bias`` (``zero`` or ``log_unigram``) as in ``GRUDecoder``.
    ``centre_condition``: the decoders read each vector minus the mean vector of its document's sentences in the
    batch (``centre_by_document``), so what the sentences of a book share (its topic, its characters) cannot
    predict a neighbour and the encoder is not pushed towards it.
    """

    spec: ClassVar[ObjectiveSpec] = ObjectiveSpec(SENTENCES, ("source",), "val/loss", "min", "books")

    def __init__(self, encoder_factory: Callable[..., SentenceEncoder], vocabs: Mapping,
                 targets: Sequence[str] = ("previous", "next"), decoder_vocab_size: int = 20000,
                 embed_dim: int = 128, hidden_dim: int = 512, condition: str = "input",
                 dropout: float = 0.0, condition_norm: bool = False, output_bias: str = "zero",
                 word_dropout: float = 0.0, read_words: bool = True, centre_condition: bool = False) -> None:
        super().__init__()
        self.centre_condition = centre_condition
        self.output_bias = check_output_bias(output_bias)
        unknown = [t for t in targets if t not in NEIGHBOURS]
        if unknown or not targets:
            raise ValueError(f"objective.targets={list(targets)}: use a non-empty subset of {list(NEIGHBOURS)}")
        self.f = encoder_factory()
        self.output_dim = self.f.output_dim
        size = min(decoder_vocab_size, len(vocabs["source"]))
        self.decoders = nn.ModuleDict({t: GRUDecoder(size, self.output_dim, embed_dim, hidden_dim, condition, dropout,
                                                     condition_norm, word_dropout, read_words)
                                       for t in targets})

    def named_decoders(self) -> list[tuple[str, GRUDecoder]]:
        """The decoders by the neighbour each generates, in ``targets`` order (typed: ModuleDict gives modules)."""
        return [(name, cast(GRUDecoder, decoder)) for name, decoder in self.decoders.items()]

    def init_from_unigram_counts(self, counts: Mapping[str, torch.Tensor]) -> None:
        """``output_bias: log_unigram``: every decoder's output bias starts at the log frequencies of the words."""
        if self.output_bias == "log_unigram":
            for _, decoder in self.named_decoders():
                decoder.init_output_bias(counts["source"])

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        tokens, lengths, doc_ids = batch["tokens"], batch["lengths"], batch["doc_ids"]
        vectors = self.f(tokens, lengths)
        condition = centre_by_document(vectors, doc_ids) if self.centre_condition else vectors
        nll = vectors.new_zeros(())
        n_tokens = correct = torch.zeros((), dtype=torch.long, device=tokens.device)
        for name, decoder in self.named_decoders():
            rows, other = neighbour_rows(doc_ids, NEIGHBOURS[name])
            if rows.numel() == 0:
                continue
            part, count, right = decoder.loss(condition[rows], tokens[other], lengths[other])
            nll, n_tokens, correct = nll + part, n_tokens + count, correct + right
        # A batch without neighbours gives a zero loss that still depends on the parameters, never NaN.
        nll = nll + 0.0 * vectors.sum()
        return token_mean(nll, n_tokens, correct)

    def embed(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.f(tokens, lengths)

