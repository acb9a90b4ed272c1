"""Uniform samples in bounded memory, and cutting them into balanced, disjoint splits."""
from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

SPLITS = ("tr", "va", "te")


class Reservoirs:
    """One reservoir (Algorithm R) per class: a uniform sample of at most ``size`` items of each class."""

    def __init__(self, size: int, rng: random.Random) -> None:
        self.size, self.rng = size, rng
        self.items: dict[Any, list[Any]] = defaultdict(list)  # a task's classes and items: words, tags, sentences
        self.seen: dict[Any, int] = defaultdict(int)

    def offer(self, key: Hashable, item) -> None:
        self.seen[key] += 1
        bucket = self.items[key]
        if len(bucket) < self.size:
            bucket.append(item)
        else:
            j = self.rng.randrange(self.seen[key])
            if j < self.size:
                bucket[j] = item


def unique(items: Iterable, key=lambda item: item) -> list:
    """First occurrence of each ``key(item)``: a sentence repeated in the corpus is used once per task."""
    seen: set = set()
    out = []
    for item in items:
        k = key(item)
        if k not in seen:
            seen.add(k)
            out.append(item)
    return out


Label = TypeVar("Label", str, int)  # a task's class: a word, a tag, a depth
Item = TypeVar("Item")


def balanced_splits(by_class: Mapping[Label, list[Item]], per_split: dict[str, int], rng: random.Random,
                    classes: Sequence[Label] | None = None) -> dict[str, list[tuple[Label, Item]]]:
    """Cut each class's items into tr/va/te with the same count per class in each split.

    Each split gets ``per_split[split] // nclasses`` items of every class when the rarest class allows;
    otherwise every split shrinks in proportion (the counts go to meta.json).
    """
    classes = list(classes if classes is not None else sorted(by_class))
    distinct = {c: unique(by_class.get(c, ()), key=lambda item: item if isinstance(item, str) else repr(item))
                for c in classes}
    per_class = {s: per_split.get(s, 0) // len(classes) for s in SPLITS}
    have = min(len(items) for items in distinct.values())
    need = sum(per_class.values())
    if have < need:
        # shrink every split in proportion, but keep one item per class in dev and test while there are three
        scaled = {s: int(per_class[s] * have / need) for s in SPLITS}
        for s in ("te", "va"):
            if per_class[s] and not scaled[s] and have >= 3:
                scaled[s] = 1
        scaled["tr"] = min(per_class["tr"], have - scaled["va"] - scaled["te"])
        per_class = scaled
    out: dict[str, list[tuple[Label, Item]]] = {s: [] for s in SPLITS}
    for c in classes:
        items = distinct[c]
        rng.shuffle(items)
        start = 0
        for s in SPLITS:
            out[s].extend((c, item) for item in items[start:start + per_class[s]])
            start += per_class[s]
    return out


def assign_targets(target_counts: dict[str, dict[Hashable, int]], per_split: dict[str, int],
                   classes: Sequence[Hashable]) -> dict[str, str]:
    """Target word -> split, so that no target word occurs in two splits (paper 003, section 2: Tense,
    SubjNum, ObjNum) and each split can be filled with ``per_split`` items, balanced over ``classes``.

    Greedy: words by decreasing count, each to the split whose neediest class is furthest from its quota
    (relative to the quota). ``target_counts[word][class]`` = candidate sentences of that class with it.
    """
    quota = {(s, c): max(per_split[s] // len(classes), 1) for s in SPLITS for c in classes}
    filled = {key: 0 for key in quota}
    assignment: dict[str, str] = {}
    order = sorted(target_counts, key=lambda w: (-sum(target_counts[w].values()), w))
    for word in order:
        counts = target_counts[word]

        def deficit(split: str, counts: dict[Hashable, int] = counts) -> float:
            return max((1 - filled[(split, c)] / quota[(split, c)]) for c in counts if c in classes)

        split = max(SPLITS, key=lambda s: (deficit(s), -SPLITS.index(s)))
        assignment[word] = split
        for c, n in counts.items():
            if c in classes:
                filled[(split, c)] += n
    return assignment


def split_by_target(items: Iterable[tuple[Hashable, str, object]], per_split: dict[str, int],
                    classes: Sequence[Hashable], rng: random.Random) -> tuple[dict[str, list], dict[str, str]]:
    """``items``: (class, target word, item). Balanced splits with no target word shared across splits."""
    items = list(items)
    counts: dict[str, dict[Hashable, int]] = defaultdict(lambda: defaultdict(int))
    for c, target, _ in items:
        counts[target][c] += 1
    assignment = assign_targets(counts, per_split, classes)
    pools: dict[str, dict[Hashable, list]] = {s: {c: [] for c in classes} for s in SPLITS}
    for c, target, item in items:
        if c in classes:
            pools[assignment[target]][c].append(item)
    per_class = {s: per_split[s] // len(classes) for s in SPLITS}
    # one scale for every split, so the tr:va:te proportions hold when a split runs short
    scale = min(1.0, *(min(len(pools[s][c]) for c in classes) / per_class[s] for s in SPLITS if per_class[s]))
    out: dict[str, list] = {s: [] for s in SPLITS}
    for s in SPLITS:
        k = int(per_class[s] * scale)
        for c in classes:
            pool = pools[s][c]
            rng.shuffle(pool)
            out[s].extend((c, item) for item in pool[:k])
    return out, assignment
