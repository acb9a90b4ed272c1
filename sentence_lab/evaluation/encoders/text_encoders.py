"""The adapter protocol the evaluation suite speaks: text in, float32 vectors out."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class TextEncoder(Protocol):
    """Anything with ``encode(sentences) -> float32 [n, d]`` and ``describe() -> dict``.

    Sentences arrive as strings whose tokens are separated by single spaces (SentEval's
    pre-tokenised text). A trained ``SentenceModel`` satisfies this protocol as it is.

    What an encoder may do beyond that is declared by the capability protocols below; the suite asks
    ``isinstance(encoder, Capability)`` and uses what is there:

    * :class:`RunsTasks`: classifies a task's text itself (NB-SVM tf-idf baselines);
    * :class:`ChecksCoverage`: says which of a task's sentences it cannot encode (precomputed vectors);
    * :class:`ReportsOOV`: the share of a task's tokens outside its vocabulary (trained models);
    * :class:`ExpandsVocabulary`: vocabulary expansion, fitted on demand and undone (trained models);
    * :class:`EncodesLayers`: every layer's vectors, for the per-layer view (trained models, sentence-transformers);
    * :class:`HasLanguages`: an encoder per language (a J_bi model), each side scored in its own language.
    """

    def encode(self, sentences: list[str]) -> np.ndarray: ...

    def describe(self) -> dict: ...


@runtime_checkable
class RunsTasks(Protocol):
    """An encoder that scores a task itself from its text: ``run_task(spec, data, params) -> result``."""

    def run_task(self, spec, data, params) -> dict: ...


@runtime_checkable
class ChecksCoverage(Protocol):
    """``check_covers(sentences)`` raises, naming what is missing, when some sentences cannot be encoded."""

    def check_covers(self, sentences: list[str]) -> None: ...


@runtime_checkable
class ReportsOOV(Protocol):
    """``oov_rate(sentences)``: the share of their tokens the encoder maps to ``<unk>`` (``None``: unknown)."""

    def oov_rate(self, sentences: list[str]) -> float | None: ...


@runtime_checkable
class ExpandsVocabulary(Protocol):
    """Vocabulary expansion (Kiros et al. 2015): ``expand_vocabulary()`` fits it on the current weights (returns
    the fit, or ``{"skipped": reason}``), ``clear_vocabulary_expansion()`` undoes it."""

    def expand_vocabulary(self) -> dict: ...

    def clear_vocabulary_expansion(self) -> None: ...


@runtime_checkable
class RemembersTokens(Protocol):
    """An encoder that tokenises sentences it is told of once, for a run: ``remember_tokens(sentences)`` keeps their
    tokens (``encode`` then skips the tokeniser for them), ``forget_tokens()`` drops them. The per-epoch suite encodes
    the same task sentences every epoch."""

    def remember_tokens(self, sentences: Iterable[str]) -> None: ...

    def forget_tokens(self) -> None: ...


@runtime_checkable
class EncodesLayers(Protocol):
    """A text encoder whose layers the suite can read: ``encode_layers(sentences)`` returns one float array
    ``[n, d_k]`` per layer, bottom first (layer 0 the pooled word vectors; each later layer pooled as the encoder
    pools its top). ``layers_end_with_output``: the last layer's vectors are ``encode``'s (their scores are the
    task's own, not computed again)."""

    layers_end_with_output: bool

    def encode_layers(self, sentences: list[str]) -> list[np.ndarray]: ...


@runtime_checkable
class HasLanguages(Protocol):
    """A model with an encoder per language: ``languages`` names them (ISO 639-1 codes), ``encode``'s own first;
    ``in_language(code)`` is the text encoder of that language's side (its own tokenizer, vocabulary and weights). The
    suite scores each further language on its probing tasks and retrieves translations between the first and it
    (``sentence_lab.evaluation.languages.sides``). A model of one language has ``languages`` of length one."""

    @property
    def languages(self) -> tuple[str, ...]: ...

    def in_language(self, language: str) -> TextEncoder: ...


class EncoderOutputError(RuntimeError):
    """The encoder returned something the suite cannot use (wrong shape, width or dtype): the run stops."""


class NonFiniteOutput(ValueError):
    """NaN/inf vectors for some sentences: the task that asked for them fails, the others run."""


def check_output(vectors, sentences: list[str], dim: int | None, name: str = "encoder") -> np.ndarray:
    """Validate one batch of encoder output and return it as float32 (float64 kept) ``[len(sentences), d]``."""
    if hasattr(vectors, "detach"):  # a torch tensor slipped through
        vectors = vectors.detach().cpu().numpy()
    arr = np.asarray(vectors)
    n = len(sentences)
    if arr.ndim != 2 or arr.shape[0] != n:
        raise EncoderOutputError(
            f"{name}.encode returned shape {arr.shape} for {n} sentences: "
            "it must return an array [n, d], one row a sentence")
    if dim is not None and arr.shape[1] != dim:
        raise EncoderOutputError(
            f"{name}.encode returned {arr.shape[1]}-d vectors after {dim}-d ones: "
            "every call must return the same width")
    if not np.issubdtype(arr.dtype, np.number):
        raise EncoderOutputError(f"{name}.encode returned dtype {arr.dtype}: it must return float vectors")
    # float64 stays float64 (STS cosines in the encoder's own precision); anything else becomes float32
    arr = arr if arr.dtype == np.float64 else arr.astype(np.float32, copy=False)
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        first = sentences[int(np.flatnonzero(bad)[0])]
        raise NonFiniteOutput(
            f"{name}.encode returned NaN/inf for {int(bad.sum())} of {n} sentences (first: {first[:60]!r}): "
            "check the checkpoint and the encoder's numerics (e.g. a mean over zero tokens)")
    return arr


class Concatenation:
    """Several encoders side by side: a sentence's vector is theirs concatenated (combine-QT, Logeswaran &
    Lee 2018, section 4.4.1: uni-QT and bi-QT models trained separately, joined at test time)."""

    def __init__(self, parts: list, descriptions: list[dict]) -> None:
        if len(parts) < 2:
            raise ValueError("a concatenation needs at least two encoders: give ckpt_path=[run_a,run_b]")
        self.parts, self.descriptions = parts, descriptions

    def encode(self, sentences: list[str], batch_size: int = 128) -> np.ndarray:
        return np.concatenate([part.encode(sentences, batch_size=batch_size) for part in self.parts], axis=1)

    def oov_rate(self, sentences: list[str]) -> float | None:
        """The largest OOV rate among the parts that report one (``None`` when none does)."""
        reported = [part.oov_rate(sentences) for part in self.parts if isinstance(part, ReportsOOV)]
        rates = [float(r) for r in reported if r is not None]
        return max(rates) if rates else None

    def describe(self) -> dict:
        return {"name": "concat(" + ",".join(d.get("name", "?") for d in self.descriptions) + ")",
                "output_dim": sum(int(getattr(p, "output_dim", 0)) for p in self.parts), "parts": self.descriptions}
