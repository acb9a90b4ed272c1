"""Sentence -> tokens: Moses (sacremoses, per language) or whitespace, optionally lowercased."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

TOKENIZER_KINDS = ("moses", "whitespace")


@dataclass(frozen=True)
class Tokenizer:
    """``kind`` is ``moses`` or ``whitespace``; ``lowercase=False`` keeps case (a case-sensitive
    vocabulary); ``lang`` picks Moses' language rules (``en``, ``fr``, ``de``, ``es``, ``fi``, ...)."""

    kind: str = "moses"
    lowercase: bool = True
    lang: str = "en"

    def __post_init__(self) -> None:
        if self.kind not in TOKENIZER_KINDS:
            raise ValueError(f"unknown tokenizer kind {self.kind!r}: use one of {TOKENIZER_KINDS}")

    def __call__(self, text: str) -> list[str]:
        if self.lowercase:
            text = text.lower()
        if self.kind == "whitespace":
            return text.split()
        return _moses(self.lang).tokenize(text, escape=False)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "lowercase": self.lowercase, "lang": self.lang}


@lru_cache(maxsize=None)
def _moses(lang: str):
    from sacremoses import MosesTokenizer

    return MosesTokenizer(lang=lang)
