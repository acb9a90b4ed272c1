"""The tagger/parser behind the syntactic and semantic tasks: a spaCy pipeline run on our own tokens.

The paper used the Stanford PCFG parser (constituency + dependencies). spaCy gives part-of-speech tags
and a dependency parse only, so the tasks defined on constituency trees (Depth, TopConstituents) are
dependency-based approximations and say so in ``meta.json``. Pinned in ``requirements-probing.txt``.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

PARSER_HINT = ("pip install -r requirements-probing.txt (spaCy and an English pipeline), or parser=none "
               "for the surface tasks only")


# Relations whose dependent is a clause's subject (English spaCy's and Universal Dependencies', before any ':' subtype)
CLAUSE_SUBJECTS = frozenset({"nsubj", "nsubjpass", "csubj", "csubjpass", "expl"})


class ParserUnavailable(RuntimeError):
    pass


@dataclass
class Parsed:
    """One sentence: our tokens with the pipeline's tags (Penn for English, universal POS for French), 0-based heads
    (the root is its own head), relations and, where the pipeline gives them, morphological features
    (``Number=Plur|Tense=Past``, one string a token)."""

    tokens: list[str]
    tags: list[str]
    heads: list[int]
    deps: list[str]
    morph: list[str] = field(default_factory=list)

    def features(self, i: int) -> dict[str, str]:
        """Token ``i``'s morphological features as a mapping (``{"Number": "Plur"}``); empty when none."""
        if i >= len(self.morph) or not self.morph[i]:
            return {}
        return dict(pair.split("=", 1) for pair in self.morph[i].split("|") if "=" in pair)

    @property
    def roots(self) -> list[int]:
        return [i for i, h in enumerate(self.heads) if h == i]

    def children(self, i: int) -> list[int]:
        return [j for j, h in enumerate(self.heads) if h == i and j != i]

    def subtree(self, i: int) -> list[int]:
        """Token ``i`` and everything below it."""
        out, stack = [], [i]
        while stack:
            j = stack.pop()
            out.append(j)
            stack.extend(self.children(j))
        return out

    def depth(self) -> int:
        """Nodes on the longest root-to-leaf path of the dependency tree."""
        memo: dict[int, int] = {}

        def level(i: int) -> int:
            if i not in memo:
                memo[i] = 1 if self.heads[i] == i else 1 + level(self.heads[i])
            return memo[i]

        return max(level(i) for i in range(len(self.tokens)))

    def phrase_depth(self) -> int:
        """The depth of the phrase-structure tree the dependency tree projects, counted as the probing paper counts
        constituency depth (Conneau et al. 2018, section 2: ROOT 1, S 2, down to the deepest part-of-speech node;
        "[1 [2 But right now , ... my thoughts [3 were [4 my [5 business ]]]] ." has depth 5).

        Each word with dependents heads one phrase; a word without is a part-of-speech node in its head's phrase. A
        head with a subject (``nsubj``, ``csubj``, ``expl``, passive forms included) is a clause: S, with the
        dependents before it (the subject, fronted adverbials), over VP, with the word and what follows it.
        Conjuncts (``conj``, chained from the first or each from the one before) are sibling phrases under one
        coordinated phrase, as the Penn Treebank brackets them."""
        def conjuncts(i: int) -> list[int]:
            out, stack = [], [i]
            while stack:
                found = [k for k in self.children(stack.pop()) if self.deps[k] == "conj"]
                out += found
                stack += found
            return out

        def deepest(i: int, level: int, in_coordination: bool = False) -> int:
            """The deepest level below token i, whose phrase (or, without dependents, its POS node) sits at
            ``level``."""
            if not in_coordination and (chain := conjuncts(i)):
                return max(deepest(c, level + 1, in_coordination=True) for c in [i, *chain])
            kids = [k for k in self.children(i) if not (in_coordination and self.deps[k] == "conj")]
            if not kids:
                return level
            if any(self.deps[k].split(":")[0] in CLAUSE_SUBJECTS for k in kids):
                return max([level + 2] + [deepest(k, level + 1 if k < i else level + 2) for k in kids])
            return max([level + 1] + [deepest(k, level + 1) for k in kids])

        return max(deepest(r, 2) for r in self.roots)  # ROOT is 1


class SpacyParser:
    def __init__(self, name: str) -> None:
        try:
            import spacy
        except ImportError as err:
            raise ParserUnavailable(f"parser={name}: spaCy is not installed: {PARSER_HINT}") from err
        try:
            self.nlp = spacy.load(name, exclude=["ner", "lemmatizer"])
        except OSError as err:
            raise ParserUnavailable(f"parser={name}: no such spaCy pipeline installed: {PARSER_HINT}") from err
        self.name, self.spacy_version = name, spacy.__version__
        # English pipelines tag in Penn's set (the English rules read it); the others in the universal one
        self.penn_tags = self.nlp.meta.get("lang", "en") == "en"

    def parse(self, sentences: Iterable[list[str]], workers: int = 1, batch_size: int = 256) -> Iterator[Parsed]:
        from spacy.tokens import Doc

        docs = (Doc(self.nlp.vocab, words=tokens) for tokens in sentences)
        for doc in self.nlp.pipe(docs, batch_size=batch_size, n_process=max(1, workers)):
            yield Parsed([t.text for t in doc], [t.tag_ if self.penn_tags else t.pos_ for t in doc],
                         [t.head.i for t in doc], [t.dep_ for t in doc], [str(t.morph) for t in doc])

    def describe(self) -> dict:
        meta = self.nlp.meta
        return {"library": "spacy", "library_version": self.spacy_version, "pipeline": self.name,
                "pipeline_version": meta.get("version"), "pipeline_spacy_version": meta.get("spacy_version"),
                "components": list(self.nlp.pipe_names),
                "annotation": ("Penn Treebank tags and ClearNLP dependency relations" if self.penn_tags else
                               "universal POS tags, Universal Dependencies relations and morphological features")
                + ", on the generator's tokens"}


def load_parser(name: str) -> SpacyParser | None:
    """None for ``parser=none``; ``ParserUnavailable`` (with the fix) when it cannot be loaded."""
    if str(name).lower() in ("none", "null", ""):
        return None
    return SpacyParser(name)
