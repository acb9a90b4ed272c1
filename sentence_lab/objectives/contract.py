"""The contract between objectives and data, in one place.

A datamodule says what it yields: ``batch`` (one of the ``BatchSpec`` below), after ``setup``
``vocabs`` (a name -> ``Vocab`` for every side it tokenises) and ``tokenizers`` (the same names ->
``Tokenizer``). Side ``source`` is what the sentence encoder reads; pair data also has side ``target``
(side b), which is the same ``Vocab`` object when ``shared_vocab`` is true (paraphrases, NLI) and its
own vocabulary otherwise (another language: translation, the bilingual hinge). Data with test sets
names them in ``test_names`` and returns one loader each from ``test_dataloader``.

An objective (an ``nn.Module`` built as ``Objective(encoder_factory=..., **config)`` with
``encoder_factory(vocab)`` building one sentence encoder) says what it consumes in ``spec``: the batch,
the vocabularies it needs, the validation metric a run monitors, and the data config that fits it
(``conf/data/<default_data>.yaml``). It implements ``forward(batch) -> {"loss": ..., metrics...}``
and ``embed(tokens, lengths) -> [B, output_dim]`` (what the evaluation sees), and sets ``output_dim``. Every objective
is a ``SentenceObjective``: its sentence encoder is ``f``, and ``embed_layers`` (each layer's vectors, for
``evaluation.layers=true``) reads ``f``'s layers unless the objective joins encoders differently.

``train.py`` calls ``check_pairing`` before training: a mismatch is a one-line error.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable

import torch
from torch import nn

from sentence_lab.encoders.base import layers_of


@dataclass(frozen=True)
class BatchSpec:
    """The keys of a batch (all tensors) and what they hold."""

    name: str
    keys: tuple[str, ...]
    description: str


SENTENCES = BatchSpec(
    "sentences", ("tokens", "lengths", "doc_ids"),
    "consecutive sentences of documents: tokens [B, T], lengths [B], doc_ids [B] (neighbours share a doc id)")
PAIRS = BatchSpec(
    "pairs", ("a_tokens", "a_lengths", "b_tokens", "b_lengths"),
    "aligned pairs (translations, paraphrases): side a over the source vocabulary, side b over the target one")
LABELLED_PAIRS = BatchSpec(
    "labelled_pairs", ("a_tokens", "a_lengths", "b_tokens", "b_lengths", "labels"),
    "sentence pairs with a class label each (NLI: 0 entailment, 1 neutral, 2 contradiction)")

TRIPLES = BatchSpec(
    "triples", ("a_tokens", "a_lengths", "b_tokens", "b_lengths", "c_tokens", "c_lengths"),
    "an anchor, its positive and a hard negative, one vocabulary (NLI: a premise, its entailment and its "
    "contradiction hypothesis); pair data labelled entailment / contradiction yields them on request")

BATCH_SPECS = {spec.name: spec for spec in (SENTENCES, PAIRS, LABELLED_PAIRS, TRIPLES)}


@dataclass(frozen=True)
class ObjectiveSpec:
    """What an objective consumes and how a run is judged.

    ``vocabularies``: ``("source",)`` when every sequence is read by the sentence encoder (both sides
    of a pair then need the one vocabulary: the data must set ``shared_vocab: true``), or
    ``("source", "target")`` when side b has its own vocabulary (a decoder's, a second encoder's).
    """

    batch: BatchSpec
    vocabularies: tuple[str, ...]
    monitor: str
    monitor_mode: str
    default_data: str


def spec_of(objective: type, config: Mapping[str, Any]) -> ObjectiveSpec:
    """What the objective class ``objective`` built from ``config`` (``conf/objective/<name>.yaml``) consumes: its
    ``spec``, or, for an objective whose settings change that (simcse's ``form``), its ``spec_for(config)``."""
    spec_for = getattr(objective, "spec_for", None)
    return cast(ObjectiveSpec, spec_for(config) if callable(spec_for) else cast(Any, objective).spec)


def source_side(batch: Mapping[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """The sentences a batch's (first) encoder reads: ``tokens`` of ``sentences``, side ``a`` of pairs."""
    if "tokens" in batch:
        return batch["tokens"], batch["lengths"]
    return batch["a_tokens"], batch["a_lengths"]


def batch_size(batch: Mapping[str, torch.Tensor]) -> int:
    """Examples in a batch of any kind."""
    return int(source_side(batch)[1].shape[0])


def check_pairing(objective_name: str, spec: ObjectiveSpec, data_name: str, datamodule) -> None:
    """Refuse data that does not yield what the objective consumes, naming a data config that does.

    Reads only what a datamodule declares before ``setup`` (``batch``, ``shared_vocab``), so a mismatch
    fails before any data is read.
    """
    fix = f"use data={spec.default_data} (or leave data= out: objective={objective_name} picks it)"
    yields: BatchSpec = datamodule.batch
    if yields.name != spec.batch.name:
        raise ValueError(f"objective={objective_name} consumes {spec.batch.name} batches but data={data_name} "
                         f"yields {yields.name}: {fix}")
    shared = getattr(datamodule, "shared_vocab", True)
    if spec.vocabularies == ("source",) and not shared:
        raise ValueError(f"objective={objective_name} reads both sides of a pair with one encoder but "
                         f"data={data_name} builds a separate target vocabulary: set data.shared_vocab=true or {fix}")


class Embeds(Protocol):
    """What every objective gives at test time: ``embed(tokens, lengths)``, the source side's sentence vectors
    ``[B, output_dim]`` (the model's ``encode`` and the evaluation read them)."""

    output_dim: int

    def embed(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor: ...


class SentenceObjective(nn.Module):
    """The base of every objective: ``f`` is the sentence encoder ``embed`` reads. ``embed_layers(tokens, lengths)``
    gives ``embed``'s vectors per layer of ``f``, bottom first (``sentence_lab.encoders.base.layers_of``;
    ``NoLayers`` for an encoder without them); an objective whose ``embed`` joins several encoders overrides it."""

    f: nn.Module

    def embed_layers(self, tokens: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        return layers_of(self.f, tokens, lengths)


@runtime_checkable
class LearnsFromUnigramCounts(Protocol):
    """An objective whose decoders start from the training words' frequencies (``output_bias: log_unigram``).

    ``SentenceModel`` calls ``init_from_unigram_counts`` once, before the first training step, with the
    datamodule's ``token_counts()`` (side -> how often each vocabulary id occurs as a target in the training
    data, ``</s>`` counted once per sentence)."""

    def init_from_unigram_counts(self, counts: Mapping[str, torch.Tensor]) -> None: ...



@runtime_checkable
class EvaluatesDifferently(Protocol):
    """An objective whose validation and test steps differ from ``forward`` (the decoders also decode greedily,
    for BLEU). ``SentenceModel`` calls ``evaluation_step(batch)`` instead of ``forward(batch)`` there; it returns
    the same ``{"loss": ..., metrics...}``."""

    def evaluation_step(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]: ...


@runtime_checkable
class CollectsCorpusMetrics(Protocol):
    """An objective that measures a whole evaluation set, not batch by batch (BLEU). ``SentenceModel`` calls
    ``corpus_metrics()`` at the end of each validation and test set, logs what it returns under
    ``val/<name>`` (``test/<set>/<name>``), and the objective forgets what it collected."""

    def corpus_metrics(self) -> dict[str, float]: ...


@runtime_checkable
class EmbedsTargetSide(Protocol):
    """An objective with a second sentence encoder over the ``target`` vocabulary, for the other language of its
    pairs (J_bi's ``g``): ``embed_target(tokens, lengths)`` is that side's test-time vector, as ``embed`` is the source
    side's. ``SentenceModel`` offers it to the evaluation as the model's second language (``in_language``)."""

    def embed_target(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor: ...
