"""SOMO / OddManOut (paper 003, section 2): a random noun or verb replaced by another of the same tag whose
bigrams with both neighbours have corpus frequencies comparable, on a log scale, to the original's.

"The same tag" is the language's (``syntax.ParsedRules.odd_tags``): English's Penn tags (NN, NNS, VB*), which carry
number and verb form; in French the universal POS with the features that inflect (a plural feminine noun for a
plural feminine noun, a third-person singular imparfait for another), so a replacement agrees as the original did."""
from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable

import numpy as np

from sentence_lab.probing_gen.parser import Parsed
from sentence_lab.probing_gen.sampling import SPLITS, Unit, one_unit
from sentence_lab.probing_gen.settings import GenSettings
from sentence_lab.probing_gen.stream import BigramCounter
from sentence_lab.probing_gen.surface import modified_half
from sentence_lab.probing_gen.task_output import TaskOutput, offered_counts

NOUN_VERB_TAGS = ("NN", "NNS", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ")
ENGLISH_METHOD = "a random noun or verb (Penn tag NN/NNS/VB*)"


def is_english_noun_or_verb(tag: str) -> bool:
    return tag in NOUN_VERB_TAGS


class Replacer:
    """Finds replacements: same (majority) tag, both bigrams within ``tolerance`` of the original in log10; only
    words whose tag is ``replaceable`` (nouns and verbs) are replaced."""

    def __init__(self, ids: dict[str, int], bigrams: BigramCounter, word_tags: dict[str, Counter],
                 tolerance: float, rng: random.Random,
                 replaceable: Callable[[str], bool] = is_english_noun_or_verb) -> None:
        self.ids, self.bigrams, self.tolerance, self.rng = ids, bigrams, tolerance, rng
        self.replaceable = replaceable
        self.words: list[str] = [""] * len(ids)  # id -> word (ids numbers every word)
        for word, i in ids.items():
            self.words[i] = word
        self.by_tag: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(len(ids), dtype=bool))
        for word, tags in word_tags.items():
            majority = tags.most_common(1)[0][0]
            if word in ids and word.isalpha() and replaceable(majority):
                self.by_tag[majority][ids[word]] = True
        self.used: dict[str, str] = {}  # replacement word -> the split it was used in

    def _close(self, counts: np.ndarray, original: int) -> np.ndarray:
        return np.abs(np.log10(np.maximum(counts, 1)) - math.log10(original)) <= self.tolerance

    def replace(self, tokens: list[str], tags: list[str], split: str) -> tuple[str, int, str] | None:
        """(modified sentence, position, original word), or None when no position has a replacement."""
        spots = [i for i in range(1, len(tokens) - 1) if self.replaceable(tags[i]) and tokens[i].isalpha()
                 and tags[i] in self.by_tag]
        self.rng.shuffle(spots)
        for i in spots:
            left, word, right = (self.ids.get(t) for t in tokens[i - 1:i + 2])
            if left is None or word is None or right is None:
                continue
            f_left, f_right = (int(c) for c in self.bigrams.count(np.array([left, word]), np.array([word, right])))
            if not f_left or not f_right:
                continue
            cands, counts = self.bigrams.followers(left)
            keep = self.by_tag[tags[i]][cands] & self._close(counts, f_left) & (cands != word)
            cands = cands[keep]
            if not len(cands):
                continue
            after = self.bigrams.count(cands, np.full(len(cands), right))
            cands = cands[(after > 0) & self._close(after, f_right)]
            options = [int(c) for c in cands if self.words[c].lower() != tokens[i].lower()
                       and self.used.get(self.words[c], split) == split]
            if not options:
                continue
            choice = self.words[self.rng.choice(options)]
            self.used[choice] = split
            return " ".join(tokens[:i] + [choice] + tokens[i + 1:]), i, tokens[i]
        return None


def word_tag_table(parsed: list[Parsed]) -> dict[str, Counter]:
    table: dict[str, Counter] = defaultdict(Counter)
    for p in parsed:
        for token, tag in zip(p.tokens, p.tags):
            table[token][tag] += 1
    return table


def odd_man_out(parsed: list[tuple[int, Parsed]], ids: dict[str, int], bigrams: BigramCounter, settings: GenSettings,
                rng: random.Random, replaceable: Callable[[str], bool] = is_english_noun_or_verb,
                what: str = ENGLISH_METHOD, unit: Unit = one_unit) -> TaskOutput:
    """Each split from its own share of the sentences; a replacement word is never used in two splits. ``parsed``:
    (document, the sentence with the tags replacements must share, ``syntax.ParsedRules.odd_tags``); ``what`` names
    the words replaced."""
    replacer = Replacer(ids, bigrams, word_tag_table([p for _, p in parsed]), settings.somo_log_tolerance, rng,
                        replaceable)
    order = list(range(len(parsed)))
    rng.shuffle(order)
    total = settings.total
    rows: dict[str, list] = {}
    start = 0
    for split in SPLITS:
        share = settings.per_split[split]
        stop = start + (len(order) * share) // total
        pool = [parsed[i] for i in order[start:stop]]
        start = stop

        def modify(p: Parsed, split=split):
            found = replacer.replace(p.tokens, p.tags, split)
            return None if found is None else found[0]

        rows[split] = modified_half(pool, modify, lambda p: " ".join(p.tokens), {split: share}, rng,
                                    ("O", "C"), unit)[split]
    offered = offered_counts({"O": [(doc, " ".join(p.tokens)) for doc, p in parsed]})
    offered.update({(doc, "C"): n for (doc, _), n in offered.items()})
    return TaskOutput.from_splits("OddManOut", rows, offered=offered,
                      method=f"C: {what} replaced by a word of the same majority "
                             f"tag whose bigrams with both neighbours have log10 corpus counts within "
                             f"{settings.somo_log_tolerance} of the original's; O: intact; no sentence in both forms; "
                             "no replacement word in two splits",
                      extra={"replacement_words": len(replacer.used)})
