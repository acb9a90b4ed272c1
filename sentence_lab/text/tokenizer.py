"""Sentence -> tokens: Penn Treebank for English (``sentence_lab.text.treebank``), Moses (sacremoses, per language) or
whitespace, optionally lowercased; or a pre-trained model's own sub-word tokenizer (``sentence_lab.text.subword``)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from sentence_lab.text import subword
from sentence_lab.text.treebank import treebank_tokens

if TYPE_CHECKING:
    from sacremoses import MosesTokenizer

TOKENIZER_KINDS = ("treebank", "moses", "whitespace", "huggingface")


@dataclass(frozen=True)
class Tokenizer:
    """``kind``: ``treebank`` (English: raw, PTB- and Moses-tokenised text give the same tokens, GloVe's;
    see ``sentence_lab.text.treebank``), ``moses`` (any language; ``lang`` picks its rules: ``en``, ``fr``, ``de``, ...)
    or
    ``whitespace`` (SentEval's reference clients); ``lowercase=False`` keeps case (a case-sensitive vocabulary).
    ``huggingface``: the fast tokenizer of the model folder ``model`` (its own normalizer lowercases or not, so
    ``lowercase`` must be false); ``fingerprint`` is its ``tokenizer.json``'s hash, filled in when not given and
    checked when given, so a model never reads text through another tokenizer than its own.
    A checkpoint records the tokenizer it was trained with, so a loaded model reads text as in training."""

    kind: str = "treebank"
    lowercase: bool = True
    lang: str = "en"
    model: str = ""
    fingerprint: str = ""

    def __post_init__(self) -> None:
        if self.kind not in TOKENIZER_KINDS:
            raise ValueError(f"unknown tokenizer kind {self.kind!r}: use one of {TOKENIZER_KINDS}")
        if (self.kind == "huggingface") != bool(self.model):
            raise ValueError(f"tokenizer kind {self.kind!r} with model={self.model!r}: a model folder goes with "
                             "kind=huggingface, and only with it")
        if self.kind == "huggingface":
            if self.lowercase:
                raise ValueError("a pre-trained model's tokenizer lowercases (or not) as the model was trained: set "
                                 "lowercase=false with kind=huggingface")
            found = subword.fingerprint(self.model)
            if self.fingerprint and self.fingerprint != found:
                raise ValueError(f"the tokenizer of {self.model} (fingerprint {found}) is not the one recorded "
                                 f"({self.fingerprint}): point it at the model folder the run was trained with")
            object.__setattr__(self, "fingerprint", found)
        if self.kind == "treebank" and self.lang != "en":
            raise ValueError(f"the treebank tokenizer is for English, not lang={self.lang!r}: use kind=moses for "
                             f"{self.lang!r} text")

    def __call__(self, text: str) -> list[str]:
        if self.lowercase:
            text = text.lower()
        if self.kind == "treebank":
            return treebank_tokens(text)
        if self.kind == "whitespace":
            return text.split()
        if self.kind == "huggingface":
            return subword.subword_tokens(self.model, text)
        return _moses(self.lang).tokenize(text, escape=False)

    def to_dict(self) -> dict:
        """The settings that rebuild it (a model folder and its fingerprint only for ``huggingface``)."""
        more = {"model": self.model, "fingerprint": self.fingerprint} if self.model else {}
        return {"kind": self.kind, "lowercase": self.lowercase, "lang": self.lang, **more}

    def identity(self) -> dict:
        """What makes its tokens what they are (caches are keyed by it): ``to_dict`` without the folder's path."""
        return {key: value for key, value in self.to_dict().items() if key != "model"}


@cache
def _moses(lang: str) -> MosesTokenizer:
    # Imported on first use: sacremoses compiles its rules as it is imported (0.7 s of every command's start-up),
    # and only a Moses tokenizer needs them.
    from sacremoses import MosesTokenizer

    return MosesTokenizer(lang=lang)
