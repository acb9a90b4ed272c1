"""Surface tasks (paper 003, section 2): SentLen, WC and BShift, read from the tokens alone."""
from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Hashable
from typing import TypeVar

from sentence_lab.probing_gen.sampling import (
    Reservoirs,
    SourcedReservoirs,
    Unit,
    balanced_splits,
    choose_unit,
    one_unit,
    unique,
)
from sentence_lab.probing_gen.settings import GenSettings
from sentence_lab.probing_gen.task_output import TaskOutput, offered_counts

Item = TypeVar("Item")


def is_word(token: str) -> bool:
    return any(ch.isalnum() for ch in token)


def length_bin_edges(settings: GenSettings) -> list[tuple[int, int]]:
    """``length_bins`` equal-width bins over [min_tokens, max_tokens]: 5-28 -> 5-8, 9-12, ..., 25-28."""
    span = settings.max_tokens - settings.min_tokens + 1
    if span % settings.length_bins:
        raise ValueError(f"length_bins={settings.length_bins} does not divide the {span} lengths "
                         f"{settings.min_tokens}..{settings.max_tokens} into equal-width bins: change one of them")
    width = span // settings.length_bins
    return [(settings.min_tokens + i * width, settings.min_tokens + (i + 1) * width - 1)
            for i in range(settings.length_bins)]


class LengthTask:
    """SentLen: the number of tokens, binned into equal-width bins (Adi et al. 2017), balanced."""

    name = "Length"

    def __init__(self, settings: GenSettings, rng: random.Random, unit: Unit = one_unit,
                 sample_unit: Unit | None = None) -> None:
        self.settings, self.rng, self.unit = settings, rng, unit
        self.edges = length_bin_edges(settings)
        self.width = self.edges[0][1] - self.edges[0][0] + 1
        per_bin = -(-settings.total // len(self.edges))
        # room for sentences the corpus repeats (" Yes , sir . "): each is used once, so a full reservoir of
        # exactly per_bin would shrink every split of the task
        self.samples = SourcedReservoirs(per_bin + per_bin // 4, rng, sample_unit)

    def offer(self, doc: int, tokens: list[str]) -> None:
        self.samples.offer((len(tokens) - self.settings.min_tokens) // self.width, doc, " ".join(tokens))

    def finish(self) -> TaskOutput:
        classes = list(range(len(self.edges)))
        by_class = self.samples.by_class()
        unit, overall = choose_unit(by_class, classes, self.unit, self.settings.total // len(classes))
        splits = balanced_splits(by_class, self.settings.per_split, self.rng, classes=classes, unit=unit,
                                 weight=self.samples.weights(classes) if unit is self.unit else None)
        return TaskOutput.from_splits(self.name, splits, method=f"label = bin of the token count; bins {self.edges}",
                                      offered=offered_counts(by_class),
                                      extra={"bins": {str(i): list(edge) for i, edge in enumerate(self.edges)},
                                             **({"balance": overall} if overall else {})})


def word_content_candidates(unigrams, settings: GenSettings) -> list[str]:
    """Alphabetic words by frequency (ties by spelling), ranks [wc_rank_start, wc_rank_start + 1.2 * wc_words):
    the first ``wc_words`` of them that have enough sentences become the classes."""
    ranked = sorted((w for w in unigrams if w.isalpha()), key=lambda w: (-unigrams[w], w))
    stop = settings.wc_rank_start + settings.wc_words + settings.wc_words // 5
    words = ranked[settings.wc_rank_start:stop]
    if len(words) < settings.wc_words:
        raise ValueError(f"WordContent: the corpus has {len(ranked)} distinct words, fewer than "
                         f"wc_rank_start + wc_words = {settings.wc_rank_start + settings.wc_words}: lower them")
    return words


class WordContentTask:
    """WC: sentences holding exactly one occurrence of exactly one of the mid-frequency words; label = that word.

    A word of ranks 2k-3k with too few such sentences gives way to the next rank after 3k (counted in meta.json),
    so that one rare word does not shrink every class.
    """

    name = "WordContent"

    def __init__(self, settings: GenSettings, rng: random.Random, unigrams, unit: Unit = one_unit,
                 sample_unit: Unit | None = None) -> None:
        self.settings, self.rng, self.unit = settings, rng, unit
        self.candidates = word_content_candidates(unigrams, settings)
        self.lookup = set(self.candidates)
        self.need = sum(n // settings.wc_words for n in settings.per_split.values())
        self.samples = SourcedReservoirs(max(self.need, 1), rng, sample_unit)

    def offer(self, doc: int, tokens: list[str]) -> None:
        hits = [t for t in tokens if t in self.lookup]
        if len(hits) == 1:
            self.samples.offer(hits[0], doc, " ".join(tokens))

    def words(self, by_class: dict) -> list[str]:
        have = {w: len(by_class.get(w, ())) for w in self.candidates}
        full = [w for w in self.candidates if have[w] >= self.need]
        if len(full) >= self.settings.wc_words:
            return full[:self.settings.wc_words]
        short = sorted((w for w in self.candidates if have[w] < self.need), key=lambda w: -have[w])
        chosen = set(full + short[:self.settings.wc_words - len(full)])
        return [w for w in self.candidates if w in chosen]

    def finish(self) -> TaskOutput:
        by_class = self.samples.by_class()
        words = self.words(by_class)
        ranks = [self.settings.wc_rank_start + self.candidates.index(w) for w in words]
        unit, overall = choose_unit(by_class, words, self.unit, self.need)
        splits = balanced_splits(by_class, self.settings.per_split, self.rng, classes=words, unit=unit,
                                 weight=self.samples.weights(words) if unit is self.unit else None)
        return TaskOutput.from_splits(self.name, splits, offered=offered_counts({w: by_class[w] for w in words}),
                          method="label = the one word of the mid-frequency list the sentence holds (exactly one "
                                 "occurrence of exactly one of them); words of frequency ranks "
                                 f"{self.settings.wc_rank_start}-"
                                 f"{self.settings.wc_rank_start + self.settings.wc_words - 1}"
                                 ", a word without enough sentences replaced by the next rank",
                          extra={**({"balance": overall} if overall else {}),
                                 "words": len(words), "ranks_used": [min(ranks), max(ranks)],
                                 "words_replaced": sum(r >= self.settings.wc_rank_start + self.settings.wc_words
                                                       for r in ranks)})


def shift_bigram(tokens: list[str], rng: random.Random) -> list[str] | None:
    """The sentence with two random adjacent words inverted; None when no two adjacent, different words exist."""
    spots = [i for i in range(len(tokens) - 1)
             if is_word(tokens[i]) and is_word(tokens[i + 1]) and tokens[i] != tokens[i + 1]]
    if not spots:
        return None
    i = rng.choice(spots)
    return tokens[:i] + [tokens[i + 1], tokens[i]] + tokens[i + 2:]


def modified_half(sentences: list[tuple[int, Item]], modify: Callable[[Item], str | None],
                  render: Callable[[Item], str], per_split: dict[str, int], rng: random.Random,
                  labels: tuple[str, str], unit: Unit = one_unit) -> dict[str, list[tuple[str, str, int]]]:
    """Binary "intact or modified" tasks: each sentence is used once, in one form only (paper 003, section 2).

    ``sentences``: (document, item); ``modify(item) -> str | None`` (None: cannot be modified), ``render(item) ->
    str`` (intact); ``labels`` = (intact, modified). Half of each split is modified, and half of each source
    unit's share of it.
    """
    intact, changed = labels
    sentences = unique(sentences, key=lambda pair: render(pair[1]))  # else a sentence could be in both forms
    rng.shuffle(sentences)
    by_class: dict[str, list[tuple[int, str]]] = {intact: [], changed: []}
    per_unit: dict[Hashable, dict[str, int]] = defaultdict(lambda: {intact: 0, changed: 0})
    need, balanced = sum(per_split.values()) // 2, 0
    for doc, item in sentences:
        # the class is drawn before trying (the one the sentence's source has fewer of, a tie at random): a sentence
        # that cannot be modified is dropped, not kept as intact, so both classes come from the same sentences
        have = per_unit[unit(doc)]
        label = changed if have[changed] < have[intact] or (have[changed] == have[intact] and rng.random() < 0.5) \
            else intact
        text = modify(item) if label == changed else render(item)
        if text is None:
            continue
        by_class[label].append((doc, text))
        have[label] += 1
        balanced += have[label] <= have[intact if label == changed else changed]
        if balanced >= need:  # every unit's smaller class summed: enough for a balanced split
            break
    return balanced_splits(by_class, per_split, rng, classes=[intact, changed], unit=unit)


class BigramShiftTask:
    """BShift: intact sentences (O) and sentences with two random adjacent words inverted (I)."""

    name = "BigramShift"

    def __init__(self, settings: GenSettings, rng: random.Random, unit: Unit = one_unit) -> None:
        self.settings, self.rng, self.unit = settings, rng, unit
        self.samples = Reservoirs(settings.total + settings.total // 4, rng)  # room for unswappable ones

    def offer(self, doc: int, tokens: list[str]) -> None:
        self.samples.offer(0, (doc, tokens))

    def finish(self) -> TaskOutput:
        def modify(tokens):
            shifted = shift_bigram(tokens, self.rng)
            return None if shifted is None else " ".join(shifted)

        sentences = list(self.samples.items[0])
        splits = modified_half(sentences, modify, " ".join, self.settings.per_split, self.rng, ("O", "I"), self.unit)
        return TaskOutput.from_splits(self.name, splits, offered=offered_counts({"O": sentences, "I": sentences}),
                                      method="I: two random adjacent words (tokens with a letter or digit, not "
                                             "equal) inverted; O: intact; no sentence in both forms")
