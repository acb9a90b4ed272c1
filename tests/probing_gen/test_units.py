"""The generator's pieces on hand-made inputs: bins, swaps, clause inversion, parse-based labels, splits."""
import random
from collections import Counter

import numpy as np
import pytest

from sentence_lab.probing_gen import stream
from sentence_lab.probing_gen.parser import Parsed
from sentence_lab.probing_gen.sampling import (
    Reservoirs,
    balanced_splits,
    choose_unit,
    one_unit,
    split_by_target,
    unit_quotas,
)
from sentence_lab.probing_gen.settings import GenSettings
from sentence_lab.probing_gen.sources import source_baseline
from sentence_lab.probing_gen.stream import BigramCounter, CorpusTables
from sentence_lab.probing_gen.surface import length_bin_edges, modified_half, shift_bigram
from sentence_lab.probing_gen.syntax import (
    argument_item,
    coordination_heuristic,
    coordination_parsed,
    invert_clauses,
    tense_item,
    top_constituents,
)
from sentence_lab.text.corpus_prep import PreparedSplit


def test_length_bins_follow_the_paper():
    # 5-to-28 tokens in 6 equal-width bins (paper 003, section 2; Adi et al. 2017)
    assert length_bin_edges(GenSettings()) == [(5, 8), (9, 12), (13, 16), (17, 20), (21, 24), (25, 28)]
    with pytest.raises(ValueError, match="equal-width"):
        length_bin_edges(GenSettings(length_bins=5))


def test_bigram_shift_is_exactly_one_adjacent_swap_of_two_words():
    tokens = "What are you doing out there ?".split()
    for seed in range(30):
        shifted = shift_bigram(tokens, random.Random(seed))
        diff = [i for i, (a, b) in enumerate(zip(tokens, shifted)) if a != b]
        assert len(diff) == 2 and diff[1] == diff[0] + 1
        i = diff[0]
        assert shifted[i] == tokens[i + 1] and shifted[i + 1] == tokens[i]
        assert "?" not in (shifted[i], shifted[i + 1])  # punctuation is never moved
    assert shift_bigram("the the , .".split(), random.Random(0)) is None


SENTENCE = "They might be only memories , but I can still feel each one .".split()
# spaCy en_core_web_sm's parse of it (tags, 0-based heads, relations), written out by hand
PARSE = Parsed(SENTENCE,
               ["PRP", "MD", "VB", "RB", "NNS", ",", "CC", "PRP", "MD", "RB", "VB", "DT", "NN", "."],
               [2, 2, 2, 4, 2, 2, 2, 10, 10, 10, 2, 12, 10, 10],
               ["nsubj", "aux", "ROOT", "advmod", "attr", "punct", "cc", "nsubj", "aux", "advmod", "conj", "det",
                "dobj", "punct"])


def test_coordination_inversion_swaps_exactly_the_two_clauses():
    found = coordination_parsed(PARSE, ratio=1.5)
    assert found == (True, 6, 13)
    inverted = invert_clauses(SENTENCE, *found, keep_case=lambda i: False)
    # the paper's own example (section 2)
    assert inverted == "I can still feel each one , but they might be only memories ."
    assert coordination_heuristic(SENTENCE, ratio=1.5) == found
    # unbalanced clauses are refused
    long_second = SENTENCE[:7] + "I can still feel each one of the many small things".split() + ["."]
    assert coordination_heuristic(long_second, ratio=1.5) is None
    # a proper noun keeps its capital
    tokens = "Paul stated the sum , and Mr. Meacham put it away .".split()
    assert invert_clauses(tokens, True, 5, 11, keep_case=lambda i: True) == \
        "Mr. Meacham put it away , and Paul stated the sum ."


def test_one_clause_sentence_is_not_a_coordination():
    p = Parsed("She reads books every evening .".split(), ["PRP", "VBZ", "NNS", "DT", "NN", "."],
               [1, 1, 1, 4, 1, 1], ["nsubj", "ROOT", "dobj", "det", "npadvmod", "punct"])
    assert coordination_parsed(p, 1.5) is None
    assert tense_item(p) == ("PRES", "reads")
    assert argument_item(p, ("nsubj", "nsubjpass")) is None  # a pronoun subject is neither NN nor NNS
    assert argument_item(p, ("dobj",)) == ("NNS", "books")


def test_tense_reads_the_finite_auxiliary_and_subject_number_the_noun():
    p = Parsed("The old men had walked to the church .".split(),
               ["DT", "JJ", "NNS", "VBD", "VBN", "IN", "DT", "NN", "."],
               [2, 2, 4, 4, 4, 4, 7, 5, 4], ["det", "amod", "nsubj", "aux", "ROOT", "prep", "det", "pobj", "punct"])
    assert tense_item(p) == ("PAST", "had")
    assert argument_item(p, ("nsubj", "nsubjpass")) == ("NNS", "men")
    modal = Parsed("He could go .".split(), ["PRP", "MD", "VB", "."], [2, 2, 2, 2], ["nsubj", "aux", "ROOT", "punct"])
    assert tense_item(modal) is None  # no tensed form in the main clause


def test_top_constituents_and_depth_on_the_papers_example():
    tokens = "Then very dark gray letters on a black screen appeared .".split()
    p = Parsed(tokens, ["RB", "RB", "JJ", "JJ", "NNS", "IN", "DT", "JJ", "NN", "VBD", "."],
               [9, 2, 4, 4, 9, 4, 8, 8, 5, 9, 9],
               ["advmod", "advmod", "amod", "amod", "nsubj", "prep", "det", "amod", "pobj", "ROOT", "punct"])
    assert top_constituents(p) == "ADVP_NP_VP_."  # the paper's "ADVP NP VP ."
    assert p.depth() == 5  # appeared -> letters -> on -> screen -> a
    # the Penn Treebank brackets it (S (ADVP (RB Then)) (NP (NP (ADJP (RB very) (JJ dark)) (JJ gray) (NNS letters))
    # (PP (IN on) (NP (DT a) (JJ black) (NN screen)))) (VP (VBD appeared)) (. .)): ROOT S NP NP ADJP RB, 6
    assert p.phrase_depth() == 6


def test_phrase_depth_counts_the_papers_example_as_the_paper_does():
    """Conneau et al. 2018, section 2: "[1 [2 But right now, for the time being, my past, my fears, and my thoughts
    [3 were [4 my [5 business]]]].]]" has depth 5: ROOT, S, VP, NP, the part of speech. spaCy's parse, its conjuncts
    chained (fears on past, thoughts on fears), as the pipeline gives it."""
    tokens = "But right now , for the time being , my past , my fears , and my thoughts were my business .".split()
    heads = [18, 2, 18, 18, 18, 7, 7, 4, 18, 10, 18, 10, 13, 10, 13, 13, 17, 13, 18, 20, 18, 18]
    deps = ["cc", "advmod", "advmod", "punct", "prep", "det", "compound", "pobj", "punct", "poss", "nsubj", "punct",
            "poss", "conj", "punct", "cc", "poss", "conj", "ROOT", "poss", "attr", "punct"]
    p = Parsed(tokens, ["X"] * len(tokens), heads, deps)
    assert p.phrase_depth() == 5 and p.depth() == 5
    chained_as_nested = Parsed(tokens, ["X"] * len(tokens), heads, [d if d != "conj" else "appos" for d in deps])
    assert chained_as_nested.phrase_depth() == 6  # were the conjuncts nested phrases, "my thoughts" would sit deeper
    caption = Parsed("Two dogs play in a field".split(), ["X"] * 6, [1, 2, 2, 2, 5, 3],
                     ["nummod", "nsubj", "ROOT", "prep", "det", "pobj"])
    # (ROOT (S (NP (CD Two) (NNS dogs)) (VP (VBP play) (PP (IN in) (NP (DT a) (NN field)))))): 6
    assert caption.phrase_depth() == 6
    fragment = Parsed("A dog on a beach".split(), ["X"] * 5, [1, 1, 1, 4, 2], ["det", "ROOT", "prep", "det", "pobj"])
    assert fragment.phrase_depth() == 5  # (ROOT (NP (DT A) (NN dog) (PP (IN on) (NP (DT a) (NN beach)))))
    assert top_constituents(PARSE) == "NP_VP_,_CC_S_."


def test_balanced_splits_equal_per_class_and_shrink_together():
    rng = random.Random(0)
    by_class = {"a": [(0, f"a{i}") for i in range(50)], "b": [(0, f"b{i}") for i in range(30)]}
    splits = balanced_splits(by_class, {"tr": 40, "va": 10, "te": 10}, rng)
    counts = {s: Counter(c for c, _, _ in rows) for s, rows in splits.items()}
    assert counts == {"tr": {"a": 20, "b": 20}, "va": {"a": 5, "b": 5}, "te": {"a": 5, "b": 5}}
    short = balanced_splits(by_class, {"tr": 80, "va": 20, "te": 20}, rng)  # b has 30 of the 60 asked
    assert {s: Counter(c for c, _, _ in rows) for s, rows in short.items()} == \
        {"tr": {"a": 20, "b": 20}, "va": {"a": 5, "b": 5}, "te": {"a": 5, "b": 5}}
    every = [item for rows in splits.values() for _, item, _ in rows]
    assert len(every) == len(set(every))


def two_sources(rng: random.Random) -> dict[str, list[tuple[int, str]]]:
    """Captions (document 0) mostly PRES, news (document 1) mostly PAST: the source tells the label."""
    rates = {0: 0.9, 1: 0.1}
    by_class: dict[str, list[tuple[int, str]]] = {"PAST": [], "PRES": []}
    for doc, pres in rates.items():
        for i in range(4000):
            label = "PRES" if rng.random() < pres else "PAST"
            by_class[label].append((doc, f"{doc}-{i}"))
    return by_class


def test_balanced_splits_balance_every_class_within_every_source_and_split():
    """Each (source, split) cell holds as many of each class (what a source lacks of one class it gives of none),
    so the source alone predicts no better than the majority: the measure the generator writes to meta.json."""
    rng = random.Random(4)
    by_class = two_sources(rng)
    overall = balanced_splits(by_class, {"tr": 1000, "va": 200, "te": 200}, random.Random(1))
    cells = Counter((doc, s, c) for s, rows in overall.items() for c, _, doc in rows)
    assert cells[(0, "tr", "PRES")] > 2 * cells[(0, "tr", "PAST")]  # balanced overall only: the source tells
    within = balanced_splits(by_class, {"tr": 1000, "va": 200, "te": 200}, random.Random(1), unit=lambda doc: doc)
    cells = Counter((doc, s, c) for s, rows in within.items() for c, _, doc in rows)
    for doc in (0, 1):
        for s in ("tr", "va", "te"):
            assert cells[(doc, s, "PAST")] == cells[(doc, s, "PRES")] > 0, (doc, s)
    # each source has ~400 of its rare class: 800 of the 700 a class needs, so nothing is short
    assert Counter(c for c, _, _ in within["tr"]) == {"PAST": 500, "PRES": 500}

    class OneGroupPerDoc:
        def group(self, doc: int) -> str:
            return f"g{doc}"

    for splits, near_majority in ((overall, False), (within, True)):
        labels = {s: [c for c, _, _ in splits[s]] for s in ("tr", "te")}
        docs = {s: [d for _, _, d in splits[s]] for s in ("tr", "te")}
        baseline = source_baseline(labels, docs, OneGroupPerDoc())
        assert baseline["majority"] == 50.0
        assert (abs(baseline["group"] - 50.0) <= 2) == near_majority, baseline
        assert baseline["document"] == baseline["group"]


def test_a_source_short_of_a_class_gives_less_and_the_splits_shrink_together():
    rng = random.Random(2)
    by_class = {"PAST": [(0, f"p{i}") for i in range(10)] + [(1, f"q{i}") for i in range(100)],
                "PRES": [(0, f"r{i}") for i in range(100)] + [(1, f"t{i}") for i in range(100)]}
    splits = balanced_splits(by_class, {"tr": 400, "va": 100, "te": 100}, rng, unit=lambda doc: doc)
    made = {s: Counter(c for c, _, _ in rows) for s, rows in splits.items()}
    assert sum(made["tr"].values()) + sum(made["va"].values()) + sum(made["te"].values()) == 2 * 110
    assert made["tr"]["PAST"] == made["tr"]["PRES"] and made["te"]["PAST"] == made["te"]["PRES"] > 0
    from_doc0 = Counter(c for rows in splits.values() for c, _, doc in rows if doc == 0)
    assert from_doc0 == {"PAST": 10, "PRES": 10}


def test_unit_quotas_follow_the_weights_and_never_pass_a_capacity():
    assert unit_quotas({"a": 100, "b": 100}, 50) == {"a": 25, "b": 25}
    assert unit_quotas({"a": 100, "b": 100}, 50, weight={"a": 900, "b": 100}) == {"a": 45, "b": 5}
    assert unit_quotas({"a": 10, "b": 100}, 50, weight={"a": 900, "b": 100}) == {"a": 10, "b": 40}
    assert unit_quotas({"a": 3, "b": 4}, 50) == {"a": 3, "b": 4}
    assert sum(unit_quotas({k: 7 for k in "abcdefg"}, 10).values()) == 10


def test_modified_half_modifies_half_of_each_source():
    rng = random.Random(5)
    sentences = [(doc, f"s{doc} {i} x") for doc in (0, 1) for i in range(300 if doc == 0 else 60)]
    splits = modified_half(sentences, lambda s: s.upper(), str, {"tr": 200, "va": 40, "te": 40}, rng, ("O", "I"),
                           unit=lambda doc: doc)
    cells = Counter((doc, s, c) for s, rows in splits.items() for c, _, doc in rows)
    for doc in (0, 1):
        for s in ("tr", "va", "te"):
            assert cells[(doc, s, "O")] == cells[(doc, s, "I")], (doc, s)
    assert sum(cells.values()) == 280


def test_split_by_target_never_shares_a_target_word():
    rng = random.Random(1)
    words = {"PAST": [f"went{i}" for i in range(40)], "PRES": [f"goes{i}" for i in range(40)]}
    items = [(label, rng.choice(words[label]), n % 3, f"s{n}{label}")
             for n in range(3000) for label in ("PAST", "PRES")]
    splits, assignment = split_by_target(items, {"tr": 1000, "va": 200, "te": 200}, ["PAST", "PRES"], rng,
                                         unit=lambda doc: doc)
    target_of = {item: target for _, target, _, item in items}
    seen = {s: {target_of[item] for _, item, _ in rows} for s, rows in splits.items()}
    assert not (seen["tr"] & seen["va"]) and not (seen["tr"] & seen["te"]) and not (seen["va"] & seen["te"])
    for s, n in (("tr", 1000), ("va", 200), ("te", 200)):
        assert Counter(c for c, _, _ in splits[s]) == {"PAST": n // 2, "PRES": n // 2}
        cells = Counter((doc, c) for c, _, doc in splits[s])
        assert all(cells[(doc, "PAST")] == cells[(doc, "PRES")] for doc in range(3)), s


def test_reservoir_is_bounded_and_uniform():
    rng = random.Random(3)
    hits = Counter()
    for _ in range(2000):
        r = Reservoirs(2, rng)
        for i in range(10):
            r.offer("k", i)
        assert len(r.items["k"]) == 2
        hits.update(r.items["k"])
    # each of the 10 items kept with probability 2/10: 400 of 2000 trials, sd ~18
    assert all(330 < hits[i] < 470 for i in range(10))


def test_bigram_counter_matches_a_plain_count_across_merges():
    rng = np.random.default_rng(0)
    counter, plain = BigramCounter(chunk=50), Counter()
    for _ in range(40):
        ids = rng.integers(0, 12, size=rng.integers(1, 15)).tolist()
        counter.add(ids)
        plain.update(zip(ids[:-1], ids[1:]))
    counter.finish()
    left = np.array([a for a in range(12) for b in range(12)])
    right = np.array([b for a in range(12) for b in range(12)])
    assert counter.count(left, right).tolist() == [plain[(a, b)] for a, b in zip(left, right)]
    followers, counts = counter.followers(3)
    assert dict(zip(followers.tolist(), counts.tolist())) == {b: n for (a, b), n in plain.items() if a == 3}


def test_corpus_tables_count_as_the_sentences_say(monkeypatch):
    """Bigrams never span two sentences (also where a sentence starts on a chunk's edge), word ids follow first
    occurrence, unigrams are the prepared counts, and the eligible sentences come in corpus order."""
    monkeypatch.setattr(stream, "_BIGRAM_CHUNK", 3)
    words = ["<not-in-train>", "the", "cat", "sat", "a", "dog"]
    sentences = [[2, 3], [1, 2, 3, 1], [5], [4, 5, 3], [1, 2]]
    ids = np.array([w for s in sentences for w in s], dtype=np.int32)
    offsets = np.cumsum([0] + [len(s) for s in sentences])
    split = PreparedSplit(ids, offsets, np.zeros(len(sentences), dtype=np.int32))
    counts = np.bincount(ids, minlength=len(words))
    tables = CorpusTables(words, counts, split, bigrams=True, min_tokens=2, max_tokens=3)
    assert list(tables.ids) == ["cat", "sat", "the", "dog", "a"]
    assert tables.unigrams == Counter(words[w] for w in ids)
    plain = Counter((words[a], words[b]) for s in sentences for a, b in zip(s[:-1], s[1:]))
    by_id = {v: k for k, v in tables.ids.items()}
    keys, found = tables.bigrams.keys, tables.bigrams.counts
    assert {(by_id[int(k >> 32)], by_id[int(k & 0xFFFFFFFF)]): int(n) for k, n in zip(keys, found)} == plain
    assert list(tables.eligible_sentences()) == [(0, ["cat", "sat"]), (0, ["a", "dog", "sat"]), (0, ["the", "cat"])]
    assert (tables.sentences, tables.tokens, tables.eligible) == (5, 12, 3)


def test_a_task_falls_back_to_the_corpus_only_when_the_source_tells_little_or_nothing_else_is_left():
    """WordContent's words: each source lacks some or has few, so within-source balance keeps less."""
    per_doc = lambda doc: doc  # noqa: E731
    # ten words, each 100 times in its own source and 25 in the other: 50 a word within sources, 120 over the
    # corpus; the source tells the word 16% of the time against 10%: the smaller, clean set is kept
    skewed = {f"w{k}": [(d, f"w{k} s{d}-{i}") for d in (0, 1) for i in range(100 if d == k % 2 else 25)]
              for k in range(10)}
    assert choose_unit(skewed, sorted(skewed), per_doc, need=120) == (per_doc, None)
    # each source has half of the words only: nothing is left within the sources, so over the corpus, said so
    halves = {f"w{k}": [(k % 2, f"w{k} s{i}") for i in range(30)] for k in range(10)}
    unit, why = choose_unit(halves, sorted(halves), per_doc, need=20)
    assert unit is one_unit and "within each source 0 sentences a class, against 20 over" in why
    assert "20.0% of the time (majority 10.0%): too few to balance" in why
    # every word in both sources alike: nothing to fall back from
    both = {c: items + [(1 - d, f"{s} again") for d, s in items] for c, items in halves.items()}
    assert choose_unit(both, sorted(both), per_doc, need=20) == (per_doc, None)
    # 100 words over 40 sources, each word missing from one source: the source tells 1.03% against 1%
    by_class = {f"w{k}": [(d, f"w{k} s{d}-{i}") for d in range(40) if d != k % 40 for i in range(2)]
                for k in range(100)}
    unit, why = choose_unit(by_class, sorted(by_class), per_doc, need=20)
    assert unit is one_unit and "1.0% of the time (majority 1.0%): the source tells little there" in why
