"""Uniform samples in bounded memory, and cutting them into balanced, disjoint splits."""
from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
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


Label = TypeVar("Label", bound=Hashable)  # a task's class: a word, a tag, a depth
Item = TypeVar("Item")
Unit = Callable[[int], Hashable]  # a document -> the source its classes are balanced within
Source = TypeVar("Source", bound=Hashable)  # a balancing unit, or a (unit, length bin) cell


def one_unit(doc: int) -> Hashable:
    """Every document in one source: balance over the whole corpus only."""
    return 0


def unit_quotas(capacity: Mapping[Source, int], take: int,
                weight: Mapping[Source, int] | None = None) -> dict[Source, int]:
    """``take`` items spread over the units in proportion to ``weight`` (default: what each can give), none above
    its capacity; what a full unit cannot take goes to the others, in the same proportion."""
    take = min(take, sum(capacity.values()))
    quota = {u: 0 for u in capacity}
    while (left := take - sum(quota.values())) > 0:
        room = {u: capacity[u] - quota[u] for u in capacity if capacity[u] > quota[u]}
        weights = {u: (weight or capacity).get(u, 0) for u in room}
        if not sum(weights.values()):
            weights = room
        total = sum(weights.values())
        exact = {u: left * w / total for u, w in weights.items()}
        give = {u: min(room[u], int(v)) for u, v in exact.items()}
        if not sum(give.values()):  # every share below one item: the largest remainders get one each
            for u in sorted(room, key=lambda u: (-exact[u], str(u)))[:left]:
                quota[u] += 1
            continue
        for u, n in give.items():
            quota[u] += n
    return quota


class SourcedReservoirs:
    """A reservoir per (source, class) (``sample_unit``: a document's source, or one for all), so that a source
    keeps its sentences of every class however rare the class is there; ``weights`` says how many of each class
    every source really had (``seen``), so that sources are drawn in the corpus' proportions, not the samples'."""

    def __init__(self, size: int, rng: random.Random, sample_unit: Unit | None) -> None:
        """``sample_unit``: the balancing unit of a document when a sample is kept per unit; None: one sample for the
        corpus (then ``weights`` is empty: the units' proportions are the sample's)."""
        self.reservoirs, self.sample_unit = Reservoirs(size, rng), sample_unit or one_unit
        self.per_unit = sample_unit is not None

    def offer(self, label: Hashable, doc: int, item: Any) -> None:
        self.reservoirs.offer((self.sample_unit(doc), label), (doc, item))

    def by_class(self) -> dict[Hashable, list[tuple[int, Any]]]:
        out: dict[Hashable, list[tuple[int, Any]]] = defaultdict(list)
        for (_, label), items in sorted(self.reservoirs.items.items(), key=lambda kv: str(kv[0])):
            out[label].extend(items)
        return out

    def weights(self, classes: Sequence[Hashable]) -> dict[Hashable, int]:
        """Per balancing unit, the count of its rarest class in the whole corpus; empty when one sample serves the
        corpus."""
        if not self.per_unit:
            return {}
        seen: dict[Hashable, dict[Hashable, int]] = defaultdict(dict)
        for (u, label), n in self.reservoirs.seen.items():
            seen[u][label] = n
        return {u: min(counts.get(c, 0) for c in classes) for u, counts in seen.items()}


def _shrunk(per_class: dict[str, int], have: int) -> dict[str, int]:
    """Every split's per-class count shrunk in proportion to ``have`` items a class, keeping one item per class in
    dev and test while there are three."""
    need = sum(per_class.values())
    if have >= need:
        return dict(per_class)
    scaled = {s: int(per_class[s] * have / need) for s in SPLITS}
    for s in ("te", "va"):
        if per_class[s] and not scaled[s] and have >= 3:
            scaled[s] = 1
    scaled["tr"] = min(per_class["tr"], have - scaled["va"] - scaled["te"])
    return scaled


def _by_unit(items: Iterable[tuple[int, Item]], unit: Unit) -> dict[Hashable, list[tuple[int, Item]]]:
    out: dict[Hashable, list[tuple[int, Item]]] = defaultdict(list)
    for doc, item in items:
        out[unit(doc)].append((doc, item))
    return out


def _take_balanced(pools: Mapping[Label, Mapping[Hashable, list[tuple[int, Item]]]], classes: Sequence[Label],
                   counts: Sequence[tuple[str, int]], rng: random.Random,
                   weight: Mapping[Hashable, int] | None = None) -> dict[str, list[tuple[Label, Item, int]]]:
    """``counts`` [(split, n a class)] taken from ``pools[class][unit]`` so that every (unit, split) cell holds
    the same number of each class: the units give in proportion to their capacity (the count of their rarest
    class), and one shuffled list of the units' slots, shared by every class, says which split each item goes to."""
    units = sorted({u for c in classes for u in pools.get(c, {})}, key=str)
    capacity = {u: min(len(pools.get(c, {}).get(u, ())) for c in classes) for u in units}
    quota = unit_quotas(capacity, sum(n for _, n in counts), weight)
    slots = [u for u in units for _ in range(quota[u])]
    rng.shuffle(slots)
    split_of = [s for s, n in counts for _ in range(n)]
    out: dict[str, list[tuple[Label, Item, int]]] = {s: [] for s in SPLITS}
    for c in classes:
        drawn = {}
        for u in units:
            items = list(pools.get(c, {}).get(u, ()))
            rng.shuffle(items)
            drawn[u] = iter(items[:quota[u]])
        for u, s in zip(slots, split_of):
            doc, item = next(drawn[u])
            out[s].append((c, item, doc))
    return out


def unit_capacity(pools: Mapping[Label, Mapping[Hashable, list]], classes: Sequence[Label]) -> int:
    units = {u for c in classes for u in pools.get(c, {})}
    return sum(min(len(pools.get(c, {}).get(u, ())) for c in classes) for u in units)


KEEP_WITHIN_SOURCES = 0.5
SOURCE_TELLS = 2.0  # points above the majority baseline
MIN_PER_CLASS = 20


def source_accuracy(pools: Mapping[Label, Mapping[Hashable, list]], classes: Sequence[Label]) -> float:
    """The accuracy (%) of predicting the class from the source alone, on a set drawn over the corpus with as many
    items of each class, each class's items drawn uniformly from its pool: ``(1/C) sum_u max_c P(u | c)``."""
    totals = {c: sum(len(items) for items in pools.get(c, {}).values()) for c in classes}
    units = {u for c in classes for u in pools.get(c, {})}
    best = sum(max(len(pools.get(c, {}).get(u, ())) / totals[c] if totals[c] else 0.0 for c in classes)
               for u in units)
    return 100.0 * best / len(classes)


def choose_unit(by_class: Mapping[Label, list[tuple[int, Item]]], classes: Sequence[Label], unit: Unit,
                need: int) -> tuple[Unit, str | None]:
    """``unit``, or the whole corpus when balancing within the sources would keep under half of what balancing over
    the corpus keeps (a task of many classes, WordContent's words, that some source lacks) and either the source
    tells the class within 2 points of the majority on a set balanced over the corpus, or within-source balance would
    leave fewer than ``MIN_PER_CLASS`` sentences a class. The reason goes to meta.json; its source-only baseline then
    says what the source still tells."""
    by_source = source_pools(by_class, classes, unit)
    within = min(unit_capacity(by_source, classes), need)
    overall = min(unit_capacity(source_pools(by_class, classes, one_unit), classes), need)
    if unit is one_unit or within >= KEEP_WITHIN_SOURCES * overall:
        return unit, None
    tells, majority = source_accuracy(by_source, classes), 100.0 / len(classes)
    if tells > majority + SOURCE_TELLS and within >= MIN_PER_CLASS:
        return unit, None
    why = ("the source tells little there" if tells <= majority + SOURCE_TELLS else
           "too few to balance within the sources: read this task against its source-only baseline")
    return one_unit, (f"balanced over the corpus only: within each source {within} sentences a class, against "
                      f"{overall} over the corpus, where the source tells the class {tells:.1f}% of the time "
                      f"(majority {majority:.1f}%): {why}")


def balanced_splits(by_class: Mapping[Label, list[tuple[int, Item]]], per_split: dict[str, int],
                    rng: random.Random, classes: Sequence[Label] | None = None,
                    unit: Unit = one_unit,
                    weight: Mapping[Hashable, int] | None = None) -> dict[str, list[tuple[Label, Item, int]]]:
    """Cut each class's ``(document, item)`` pairs into tr/va/te with the same count per class in each split and,
    within each source unit (``unit(document)``), the same count per class in each split.

    Each split gets ``per_split[split] // nclasses`` items of every class when the sources allow; otherwise every
    split shrinks in proportion (the counts go to meta.json). The units give in proportion to ``weight`` (default:
    their capacity, the count of their rarest class). Returns ``{split: [(class, item, document)]}``.
    """
    classes = list(classes if classes is not None else sorted(by_class, key=str))
    pools = source_pools(by_class, classes, unit)
    per_class = _shrunk({s: per_split.get(s, 0) // len(classes) for s in SPLITS}, unit_capacity(pools, classes))
    return _take_balanced(pools, classes, [(s, per_class[s]) for s in SPLITS], rng, weight)


def item_key(item: Any) -> Any:
    """What makes two items the same item (a sentence, or the repr of a parsed one)."""
    return item if isinstance(item, str) else repr(item)


def source_pools(by_class: Mapping[Label, Iterable[tuple[int, Item]]], classes: Sequence[Label],
                 unit: Unit) -> dict[Label, dict[Hashable, list[tuple[int, Item]]]]:
    """Each class's distinct ``(document, item)`` pairs (the first of a repeated item), by source unit."""
    return {c: _by_unit(unique(by_class.get(c, ()), key=lambda pair: item_key(pair[1])), unit) for c in classes}


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


def split_by_target(items: Iterable[tuple[Hashable, str, int, object]], per_split: dict[str, int],
                    classes: Sequence[Hashable], rng: random.Random,
                    unit: Unit = one_unit) -> tuple[dict[str, list], dict[str, str]]:
    """``items``: (class, target word, document, item). Balanced splits (each split balanced within each source
    unit too) with no target word shared across splits; returns ``({split: [(class, item, document)]},
    {target word: split})``."""
    items = list(items)
    counts: dict[str, dict[Hashable, int]] = defaultdict(lambda: defaultdict(int))
    for c, target, _, _ in items:
        counts[target][c] += 1
    assignment = assign_targets(counts, per_split, classes)
    pools: dict[str, dict[Hashable, dict[Hashable, list]]] = {s: {c: defaultdict(list) for c in classes}
                                                              for s in SPLITS}
    for c, target, doc, item in items:
        if c in classes:
            pools[assignment[target]][c][unit(doc)].append((doc, item))
    per_class = {s: per_split[s] // len(classes) for s in SPLITS}
    # one scale for every split, so the tr:va:te proportions hold when a split runs short
    scale = min(1.0, *(unit_capacity(pools[s], classes) / per_class[s] for s in SPLITS if per_class[s]))
    out: dict[str, list] = {s: [] for s in SPLITS}
    for s in SPLITS:
        out[s] = _take_balanced(pools[s], classes, [(s, int(per_class[s] * scale))], rng)[s]
    return out, assignment
