"""Sentence -> tokens: Penn Treebank for English (``sentence_lab.text.treebank``), Moses (sacremoses, per language) or
whitespace, optionally lowercased."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from sentence_lab.text.treebank import treebank_tokens

if TYPE_CHECKING:
    from sacremoses import MosesTokenizer

TOKENIZER_KINDS = ("treebank", "moses", "whitespace")


@dataclass(frozen=True)
class Tokenizer:
    """``kind``: ``treebank`` (English: raw, PTB- and Moses-tokenised text give the same tokens, GloVe's;
    see ``sentence_lab.text.treebank``), ``moses`` (any language; ``lang`` picks its rules: ``en``, ``fr``, ``de``, ...)
    or
    ``whitespace`` (SentEval's reference clients); ``lowercase=False`` keeps case (a case-sensitive vocabulary).
    A checkpoint records the tokenizer it was trained with, so a loaded model reads text as in training."""

    kind: str = "treebank"
    lowercase: bool = True
    lang: str = "en"

    def __post_init__(self) -> None:
        if self.kind not in TOKENIZER_KINDS:
            raise ValueError(f"unknown tokenizer kind {self.kind!r}: use one of {TOKENIZER_KINDS}")
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
        return _moses(self.lang).tokenize(text, escape=False)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "lowercase": self.lowercase, "lang": self.lang}


@cache
def _moses(lang: str) -> MosesTokenizer:
    # Imported on first use: sacremoses compiles its rules as it is imported (0.7 s of every command's start-up),
    # and only a Moses tokenizer needs them.
    from sacremoses import MosesTokenizer

    return MosesTokenizer(lang=lang)
