"""Tasks read off a tagged and parsed sentence (paper 003, section 2): Tense, SubjNum, ObjNum, TreeDepth,
TopConst and CoordInv. The parse is spaCy's dependency parse (``parser.py``), not the paper's Stanford
constituency parse: TreeDepth and TopConst are dependency-based approximations, named so in meta.json.
"""
from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from scipy.stats import spearmanr

from sentence_lab.probing_gen.parser import Parsed
from sentence_lab.probing_gen.sampling import (
    Unit,
    balanced_splits,
    choose_unit,
    one_unit,
    split_by_target,
    unit_quotas,
)
from sentence_lab.probing_gen.settings import GenSettings
from sentence_lab.probing_gen.somo import ENGLISH_METHOD, is_english_noun_or_verb
from sentence_lab.probing_gen.surface import length_bin_edges, modified_half
from sentence_lab.probing_gen.task_output import TaskOutput, offered_counts

FINITE = {"VBD": "PAST", "VBP": "PRES", "VBZ": "PRES"}
NUMBER = {"NN": "NN", "NNS": "NNS"}
SUBJECT_DEPS = ("nsubj", "nsubjpass")
FINAL_PUNCT = {".", "!", "?"}
COORDINATORS = {"and", "but", "or", "nor", "so", "yet"}


def main_verb(p: Parsed) -> int | None:
    """The one root, when the sentence parses as one clause headed by a verb."""
    roots = p.roots
    if len(roots) != 1 or not p.tags[roots[0]].startswith(("VB", "MD")):
        return None
    return roots[0]


def finite_verb(p: Parsed, root: int) -> int | None:
    """The main clause's tensed form: its first auxiliary before the verb if any (``has gone``), else the verb."""
    for j in p.children(root):
        if j < root and p.deps[j] in ("aux", "auxpass"):
            return j if p.tags[j] in FINITE else None
    return root if p.tags[root] in FINITE else None


def tense_item(p: Parsed) -> tuple[str, str] | None:
    root = main_verb(p)
    verb = None if root is None else finite_verb(p, root)
    return None if verb is None else (FINITE[p.tags[verb]], p.tokens[verb].lower())


def argument_item(p: Parsed, deps: tuple[str, ...]) -> tuple[str, str] | None:
    """(NN|NNS, the noun) of the main verb's argument with one of ``deps`` (subject or direct object)."""
    root = main_verb(p)
    if root is None:
        return None
    args = [j for j in p.children(root) if p.deps[j] in deps]
    if len(args) != 1 or p.tags[args[0]] not in NUMBER:
        return None
    return NUMBER[p.tags[args[0]]], p.tokens[args[0]].lower()


def phrase_label(p: Parsed, i: int) -> str:
    tag, dep = p.tags[i], p.deps[i]
    if dep == "punct":
        return tag
    if dep in ("advcl", "mark") or (tag == "IN" and dep != "prep"):
        return "SBAR"
    if tag.startswith(("NN", "PRP", "DT", "CD", "EX", "WP")):
        return "NP"
    if tag.startswith("RB") or tag == "WRB":
        return "ADVP"
    if tag in ("IN", "TO"):
        return "PP"
    if tag.startswith("JJ"):
        return "ADJP"
    if tag == "CC":
        return "CC"
    if tag.startswith(("VB", "MD")):
        return "S"
    if tag == "UH":
        return "INTJ"
    return tag


def top_constituents(p: Parsed) -> str | None:
    """Dependency-based approximation of the constituents right under S: the root's dependents in order,
    each as its phrase type; the verb with its auxiliaries and its complements to the right is one VP;
    a coordinated clause to the right is ``CC S``. E.g. "Then dark letters appeared ." -> ``ADVP_NP_VP_.``."""
    roots = p.roots
    if len(roots) != 1:
        return None
    root = roots[0]
    verbal = p.tags[root].startswith(("VB", "MD"))
    labels: list[str] = []
    for i in sorted(p.children(root) + [root]):
        dep = p.deps[i]
        if i == root:
            label = "VP" if verbal else phrase_label(p, i)
        elif verbal and dep in ("aux", "auxpass", "neg"):
            label = "VP"
        elif i > root and verbal and dep not in ("punct", "cc", "conj"):
            label = "VP"
        elif dep == "conj":
            label = "S" if p.tags[i].startswith(("VB", "MD")) else phrase_label(p, i)
        else:
            label = phrase_label(p, i)
        if not (label == "VP" and labels and labels[-1] == "VP"):
            labels.append(label)
    return "_".join(labels + final_punctuation(p, root, lambda i: p.tags[i]))


def final_punctuation(p: Parsed, root: int, label: Callable[[int], str]) -> list[str]:
    """The final punctuation's label when the parser hangs it below the root: it belongs under S all the same."""
    last = len(p.tokens) - 1
    return [label(last)] if p.deps[last] == "punct" and p.heads[last] != root else []


SEPARATORS = {",", ";", ":"}
QUOTES = {'"', "“", "”", "‘", "’", "'", "``", "''", "_"}


def invert_clauses(tokens: list[str], comma: bool, cc: int, end: int, keep_case: Callable[[int], bool]) -> str:
    """``A [,;:] cc B .`` -> ``B [,;:] cc a .``: clause B first (capitalised), A lower-cased at its start unless
    ``keep_case(0)`` (``I``, a proper noun). ``comma``: a separator stands before ``cc``."""
    first = tokens[:cc - 1] if comma else tokens[:cc]
    second = tokens[cc + 1:end]
    first = ([first[0] if keep_case(0) else first[0][:1].lower() + first[0][1:]] + first[1:])
    second = [second[0][:1].upper() + second[0][1:]] + second[1:]
    return " ".join(second + ([tokens[cc - 1]] if comma else []) + [tokens[cc]] + first + tokens[end:])


def _balanced(len1: int, len2: int, ratio: float) -> bool:
    return min(len1, len2) >= 2 and max(len1, len2) <= ratio * min(len1, len2)


SUBJECT_LIKE = {"i", "you", "he", "she", "it", "we", "they", "there", "this", "that", "these", "those", "the", "a",
                "an", "his", "her", "my", "our", "their", "its", "your", "no", "one", "some", "all", "every", "each"}


@dataclass(frozen=True)
class Coordination:
    """What two coordinate clauses look like in a language (CoordInv, paper 003, section 2): its coordinators, the
    relations of a clause's subject, the words a clause starts with (the pre-filter before parsing and the heuristic
    without a parser), its verbal and proper-noun tags, and its main clause's verb."""

    coordinators: frozenset[str]
    subject_deps: tuple[str, ...]
    subject_like: frozenset[str]
    is_verb: Callable[[str], bool]
    keeps_capital: Callable[[str, str], bool]  # (token, tag): a word that stays capitalised when its clause moves
    main_verb: Callable[[Parsed], int | None]
    # Universal Dependencies hang the coordinator (and a comma before it) from the second clause's verb; ClearNLP,
    # English's, from the first's
    cc_on_conjunct: bool = False
    quotes: frozenset[str] = frozenset(QUOTES)  # a sentence with one is left out: moving a clause would unbalance it


ENGLISH_COORDINATION = Coordination(frozenset(COORDINATORS), SUBJECT_DEPS + ("expl",), frozenset(SUBJECT_LIKE),
                                    lambda tag: tag.startswith(("VB", "MD")),
                                    lambda token, tag: tag.startswith("NNP") or token == "I", main_verb)


def coordination_parsed(p: Parsed, ratio: float,
                        rules: Coordination = ENGLISH_COORDINATION) -> tuple[bool, int, int] | None:
    """(comma before cc, cc index, end of clause 2) when the sentence is two coordinate clauses: the root
    verb has one ``cc`` and one verbal ``conj`` with its own subject, and that conj's subtree is exactly
    the second clause."""
    root = rules.main_verb(p)
    if root is None:
        return None
    kids = p.children(root)
    conjs = [j for j in kids if p.deps[j] == "conj"]
    if len(conjs) != 1:
        return None
    conj = conjs[0]
    ccs = [j for j in (p.children(conj) if rules.cc_on_conjunct else kids) if p.deps[j] == "cc"]
    if len(ccs) != 1:
        return None
    cc = ccs[0]
    if not (root < cc < conj) or not rules.is_verb(p.tags[conj]) or p.tokens[cc].lower() not in rules.coordinators:
        return None
    if not any(p.deps[j] in rules.subject_deps for j in p.children(conj)):
        return None
    end = len(p.tokens) - 1 if p.tokens[-1] in FINAL_PUNCT else len(p.tokens)
    comma = p.tokens[cc - 1] in SEPARATORS
    attached = {cc, cc - 1} if rules.cc_on_conjunct and comma else {cc}  # under the conjunct in UD: not clause 2
    # the final . may hang from either verb
    span = [j for j in p.subtree(conj) if j < end and not (rules.cc_on_conjunct and j in attached)]
    if min(span) != cc + 1 or max(span) != end - 1:
        return None
    len1 = cc - 1 if comma else cc
    if not _balanced(len1, end - cc - 1, ratio):
        return None
    return comma, cc, end


def coordination_heuristic(tokens: list[str], ratio: float,
                           rules: Coordination = ENGLISH_COORDINATION) -> tuple[bool, int, int] | None:
    """Without a parser: exactly one ``, <coordinator>`` followed by a pronoun or determiner, and a final
    ``.``/``!``/``?``; clause lengths balanced. An approximation of "two coordinate clauses"."""
    spots = [k for k in range(1, len(tokens) - 2) if tokens[k] == "," and tokens[k + 1].lower() in rules.coordinators]
    if len(spots) != 1 or tokens[-1] not in FINAL_PUNCT or any(t in rules.quotes for t in tokens):
        return None
    k = spots[0]
    if tokens[k + 2].lower() not in rules.subject_like:
        return None
    end = len(tokens) - 1
    if not _balanced(k, end - k - 2, ratio):
        return None
    return True, k + 1, end


def coordination_candidate(tokens: list[str], rules: Coordination = ENGLISH_COORDINATION) -> bool:
    """A cheap superset of what ``coordination_parsed`` accepts, so only these sentences are parsed for CoordInv."""
    if tokens[-1] not in FINAL_PUNCT or any(t in rules.quotes for t in tokens):
        return False  # quoted speech: moving a clause would unbalance its quotes
    return any(tokens[k].lower() in rules.coordinators
               and (tokens[k - 1] in SEPARATORS or tokens[k + 1].lower() in rules.subject_like)
               for k in range(1, len(tokens) - 2))


PARSED_COORDINATION = ("spaCy dependency parse: the root verb has one cc and one verbal conj with its own subject, "
                       "whose subtree is the whole second clause")


def proper_noun_test(tokens: list[str], tags: list[str],
                     rules: Coordination = ENGLISH_COORDINATION) -> Callable[[int], bool]:
    return lambda i: rules.keeps_capital(tokens[i], tags[i])


@dataclass(frozen=True)
class ParsedRules:
    """A language's rules for the tasks read off one parsed sentence: each gives (label, target word) or None."""

    tense: Callable[[Parsed], tuple[str, str] | None]
    subject: Callable[[Parsed], tuple[str, str] | None]
    object: Callable[[Parsed], tuple[str, str] | None]
    how: dict[str, str]  # task -> how its label is read (meta.json's method)
    # OddManOut (somo.py): each token's tag a replacement must share, which of those tags are replaced, and how the
    # replaced words are named in meta.json
    odd_tags: Callable[[Parsed], list[str]] = lambda p: list(p.tags)
    replaceable: Callable[[str], bool] = is_english_noun_or_verb
    odd_words: str = ENGLISH_METHOD
    coordination: Coordination = ENGLISH_COORDINATION  # CoordinationInversion
    top_constituents: Callable[[Parsed], str | None] = top_constituents
    top_how: tuple[str, str] = (  # TopConstituents' method and approximation in meta.json
        "label = sequence of the root's dependents as phrase types",
        "dependency-based: phrase types from the dependents' tags, the verb with its auxiliaries and right-hand "
        "complements as one VP; the paper reads the constituents under S from a constituency parse")


ENGLISH_RULES = ParsedRules(
    tense=tense_item, subject=lambda p: argument_item(p, SUBJECT_DEPS), object=lambda p: argument_item(p, ("dobj",)),
    how={"Tense": "the main clause's finite verb (its first auxiliary, else the root verb): VBD -> PAST, "
                  "VBP/VBZ -> PRES",
         "SubjNumber": "the main verb's one nsubj/nsubjpass: NN or NNS",
         "ObjNumber": "the main verb's one dobj: NN or NNS"})


class ParsedTasks:
    """Collects, from each parsed sentence, its item for every parser task asked for (CoordInv aside: its
    sentences are pre-filtered and parsed apart); ``finish`` cuts the splits."""

    def __init__(self, tasks: list[str], settings: GenSettings, rng: random.Random,
                 rules: ParsedRules = ENGLISH_RULES, unit: Unit = one_unit) -> None:
        self.tasks, self.settings, self.rng, self.rules, self.unit = tasks, settings, rng, rules, unit
        # task -> (label, target, document, sentence)
        self.targets: dict[str, list[tuple[str, str, int, str]]] = defaultdict(list)
        # (depth, length bin) -> (document, sentence)
        self.depth: dict[tuple[int, int], list[tuple[int, str]]] = defaultdict(list)
        self.top: list[tuple[str, int, str]] = []
        self.edges = length_bin_edges(settings)

    def offer(self, p: Parsed, doc: int = 0) -> None:
        sentence = " ".join(p.tokens)
        for task, item in (("Tense", self.rules.tense), ("SubjNumber", self.rules.subject),
                           ("ObjNumber", self.rules.object)):
            if task in self.tasks:
                found = item(p)
                if found is not None:
                    self.targets[task].append((found[0], found[1], doc, sentence))
        if "Depth" in self.tasks and len(p.roots) == 1:
            width = self.edges[0][1] - self.edges[0][0] + 1
            self.depth[(p.phrase_depth(), (len(p.tokens) - self.settings.min_tokens) // width)].append((doc, sentence))
        if "TopConstituents" in self.tasks:
            seq = self.rules.top_constituents(p)
            if seq is not None:
                self.top.append((seq, doc, sentence))

    def finish(self) -> list[TaskOutput]:
        out = []
        per_split = self.settings.per_split
        labels = {"Tense": ["PAST", "PRES"], "SubjNumber": ["NN", "NNS"], "ObjNumber": ["NN", "NNS"]}
        how = self.rules.how
        for task in ("Tense", "SubjNumber", "ObjNumber"):
            if task in self.tasks:
                splits, assignment = split_by_target(self.targets[task], per_split, labels[task], self.rng,
                                                     self.unit)
                offered = offered_counts({c: [(doc, s) for label, _, doc, s in self.targets[task] if label == c]
                                          for c in labels[task]})
                out.append(TaskOutput.from_splits(task, splits, method=how[task] + "; no target word in two splits",
                                                  offered=offered, extra={"target_words": len(assignment)}))
        if "Depth" in self.tasks:
            out.append(self._depth())
        if "TopConstituents" in self.tasks:
            out.append(self._top())
        return out

    def _depth(self) -> TaskOutput:
        values = sorted({d for d, _ in self.depth})
        k = self.settings.depth_classes

        strata: dict[tuple[int, Hashable, int], list[tuple[int, str]]] = defaultdict(list)  # (depth, unit, bin)
        for (d, b), items in self.depth.items():
            for doc, sentence in items:
                strata[(d, self.unit(doc), b)].append((doc, sentence))
        cells_seen = sorted({(u, b) for _, u, b in strata}, key=str)

        def cells(window: list[int]) -> dict[tuple[Hashable, int], int]:
            """Per (source unit, length bin), the count every depth of the window can give: equal length
            distributions, within each source."""
            return {cell: min(len(strata.get((d, *cell), ())) for d in window) for cell in cells_seen}

        first = self.settings.depth_min
        windows = [list(range(first, first + k))] if first is not None else \
            [values[i:i + k] for i in range(max(1, len(values) - k + 1))]
        # the paper's "structured sampling" de-correlates depth and length: every depth class gets the same
        # number of sentences in each length bin (and source); the window of depths is the one that keeps the most
        best = max(windows, key=lambda w: (sum(cells(w).values()), -w[0]))
        quota = unit_quotas(cells(best), self.settings.total // len(best))
        by_class: dict[int, list[tuple[int, str]]] = {d: [] for d in best}
        for cell, q in quota.items():
            for d in best:
                items = list(strata.get((d, *cell), ()))
                self.rng.shuffle(items)
                by_class[d].extend(items[:q])
        splits = balanced_splits(by_class, self.settings.per_split, self.rng, classes=best, unit=self.unit)
        rows = [(label, sentence) for part in splits.values() for label, sentence, _ in part]
        rho = spearmanr([int(label) for label, _ in rows], [len(s.split()) for _, s in rows])[0] if rows else None
        offered = offered_counts({d: [item for (depth, _, _), items in strata.items() if depth == d for item in items]
                                  for d in best})
        return TaskOutput.from_splits("Depth", splits, offered=offered,
                          method="label = the depth of the phrase-structure tree the dependency tree projects, "
                                 "counted as the paper counts constituency depth (ROOT 1, S 2, ... the deepest "
                                 f"part-of-speech node), classes {best[0]}-{best[-1]}"
                                 f"{' (the paper' + chr(39) + 's)' if best == list(range(5, 13)) else ''}; every "
                                 "depth gets the same count in each length bin (length de-correlated)",
                          approximation="phrase structure projected from the dependency parse, not the Stanford "
                                        "PCFG's constituency parse of the paper: the paper's count on another tree",
                          extra={"depths": best,
                                 "length_depth_spearman": None if rho is None else round(float(rho), 3)})

    def _top(self) -> TaskOutput:
        k = self.settings.top_constituents_classes
        freq = Counter(seq for seq, _, _ in self.top)
        kept = [seq for seq, _ in freq.most_common(k - 1)]
        keep = set(kept)
        by_class: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for seq, doc, sentence in self.top:
            by_class[seq if seq in keep else "OTHER"].append((doc, sentence))
        classes = kept + ["OTHER"]
        unit, overall = choose_unit(by_class, classes, self.unit, self.settings.total // len(classes))
        splits = balanced_splits(by_class, self.settings.per_split, self.rng, classes=classes, unit=unit)
        method, approximation = self.rules.top_how
        return TaskOutput.from_splits("TopConstituents", splits, offered=offered_counts(by_class),
                          method=f"{method}; the {k - 1} most frequent sequences and OTHER",
                          approximation=approximation,
                          extra={**({"balance": overall} if overall else {}), "sequences": kept,
                                             "sentences_per_class": {c: len({s for _, s in by_class[c]})
                                                                     for c in classes}})


def coordination_task(items: list[tuple[int, tuple[list[str], tuple, Callable[[int], bool]]]], settings: GenSettings,
                      rng: random.Random, method: str, approximation: str | None, unit: Unit = one_unit) -> TaskOutput:
    """CoordInv: intact (O) or the two clauses swapped (I); each sentence in one form only. ``items``:
    (document, (tokens, the clauses' positions, the case test))."""
    def modify(item):
        tokens, (comma, cc, end), keep_case = item
        return invert_clauses(tokens, comma, cc, end, keep_case)

    splits = modified_half(list(items), modify, lambda item: " ".join(item[0]), settings.per_split, rng, ("O", "I"),
                           unit)
    offered = offered_counts({"O": [(doc, " ".join(item[0])) for doc, item in items]})
    offered.update({(doc, "I"): n for (doc, _), n in offered.items()})
    return TaskOutput.from_splits("CoordinationInversion", splits, offered=offered, method=method +
                      f"; clauses balanced (longer <= {settings.coord_max_length_ratio} x shorter); I: the two clauses "
                      "swapped", approximation=approximation)
