"""Surface tasks (paper 003, section 2): SentLen, WC and BShift, read from the tokens alone."""
from __future__ import annotations

import random

from sentence_lab.probing_gen.sampling import Reservoirs, balanced_splits, unique
from sentence_lab.probing_gen.settings import GenSettings
from sentence_lab.probing_gen.task_output import TaskOutput, rows_from_splits


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

    def __init__(self, settings: GenSettings, rng: random.Random) -> None:
        self.settings, self.rng = settings, rng
        self.edges = length_bin_edges(settings)
        self.width = self.edges[0][1] - self.edges[0][0] + 1
        per_bin = -(-settings.total // len(self.edges))
        # room for sentences the corpus repeats (" Yes , sir . "): each is used once, so a full reservoir of
        # exactly per_bin would shrink every split of the task
        self.samples = Reservoirs(per_bin + per_bin // 4, rng)

    def offer(self, tokens: list[str]) -> None:
        self.samples.offer((len(tokens) - self.settings.min_tokens) // self.width, " ".join(tokens))

    def finish(self) -> TaskOutput:
        splits = balanced_splits(self.samples.items, self.settings.per_split, self.rng,
                                 classes=range(len(self.edges)))
        return TaskOutput(self.name, rows_from_splits(splits),
                          method=f"label = bin of the token count; bins {self.edges}",
                          extra={"bins": {str(i): list(edge) for i, edge in enumerate(self.edges)}})


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

    def __init__(self, settings: GenSettings, rng: random.Random, unigrams) -> None:
        self.settings, self.rng = settings, rng
        self.candidates = word_content_candidates(unigrams, settings)
        self.lookup = set(self.candidates)
        self.need = sum(n // settings.wc_words for n in settings.per_split.values())
        self.samples = Reservoirs(max(self.need, 1), rng)

    def offer(self, tokens: list[str]) -> None:
        hits = [t for t in tokens if t in self.lookup]
        if len(hits) == 1:
            self.samples.offer(hits[0], " ".join(tokens))

    def words(self) -> list[str]:
        have = {w: len(self.samples.items.get(w, ())) for w in self.candidates}
        full = [w for w in self.candidates if have[w] >= self.need]
        if len(full) >= self.settings.wc_words:
            return full[:self.settings.wc_words]
        short = sorted((w for w in self.candidates if have[w] < self.need), key=lambda w: -have[w])
        chosen = set(full + short[:self.settings.wc_words - len(full)])
        return [w for w in self.candidates if w in chosen]

    def finish(self) -> TaskOutput:
        words = self.words()
        ranks = [self.settings.wc_rank_start + self.candidates.index(w) for w in words]
        splits = balanced_splits(self.samples.items, self.settings.per_split, self.rng, classes=words)
        return TaskOutput(self.name, rows_from_splits(splits),
                          method="label = the one word of the mid-frequency list the sentence holds (exactly one "
                                 "occurrence of exactly one of them); words of frequency ranks "
                                 f"{self.settings.wc_rank_start}-"
                                 f"{self.settings.wc_rank_start + self.settings.wc_words - 1}"
                                 ", a word without enough sentences replaced by the next rank",
                          extra={"words": len(words), "ranks_used": [min(ranks), max(ranks)],
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


def modified_half(sentences: list, modify, render, per_split: dict[str, int], rng: random.Random,
                  labels: tuple[str, str]) -> dict[str, list[tuple[str, str]]]:
    """Binary "intact or modified" tasks: each sentence is used once, in one form only (paper 003, section 2).

    ``modify(item) -> str | None`` (None: cannot be modified), ``render(item) -> str`` (intact);
    ``labels`` = (intact, modified). Half of each split is modified.
    """
    intact, changed = labels
    sentences = unique(sentences, key=render)  # a repeated sentence could otherwise appear in both forms
    rng.shuffle(sentences)
    by_class: dict[str, list[str]] = {intact: [], changed: []}
    need = sum(per_split.values()) // 2
    for item in sentences:
        # the class is drawn before trying: a sentence that cannot be modified is dropped, not kept as intact,
        # so both classes come from the same sentences
        label = changed if len(by_class[changed]) < need and (len(by_class[intact]) >= need or rng.random() < 0.5) \
            else intact
        if label == changed:
            modified = modify(item)
            if modified is not None:
                by_class[changed].append(modified)
        elif len(by_class[intact]) < need:
            by_class[intact].append(render(item))
        if len(by_class[intact]) >= need and len(by_class[changed]) >= need:
            break
    return balanced_splits(by_class, per_split, rng, classes=[intact, changed])


class BigramShiftTask:
    """BShift: intact sentences (O) and sentences with two random adjacent words inverted (I)."""

    name = "BigramShift"

    def __init__(self, settings: GenSettings, rng: random.Random) -> None:
        self.settings, self.rng = settings, rng
        self.samples = Reservoirs(settings.total + settings.total // 4, rng)  # room for unswappable ones

    def offer(self, tokens: list[str]) -> None:
        self.samples.offer(0, tokens)

    def finish(self) -> TaskOutput:
        def modify(tokens):
            shifted = shift_bigram(tokens, self.rng)
            return None if shifted is None else " ".join(shifted)

        splits = modified_half(list(self.samples.items[0]), modify, " ".join, self.settings.per_split, self.rng,
                               ("O", "I"))
        return TaskOutput(self.name, rows_from_splits(splits),
                          method="I: two random adjacent words (tokens with a letter or digit, not equal) inverted; "
                                 "O: intact; no sentence in both forms")
