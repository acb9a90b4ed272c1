"""English tokens: every form a sentence arrives in gives GloVe's PTB tokens, and tokenising the output again
changes nothing (issue 20, part 1). The gold cases are written by hand from the PTB conventions (GloVe 6B has
``n't``, ``'s``, ``ca``, ``wo``; not ``'t``)."""
from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from sentence_lab.tasks.registry import TASKS
from sentence_lab.text import Tokenizer
from sentence_lab.text.documents import list_documents, read_document, split_sentences
from sentence_lab.text.glove import glove_words
from sentence_lab.text.treebank import single_pass, treebank_tokens

ROOT = Path(__file__).resolve().parents[2]

# (forms a sentence arrives in: raw, PTB-tokenised as in MR/SUBJ/MPQA/SST, Moses-tokenised as in CR/MRPC/SICK/STS
# and as Moses splits raw text, ...) -> the tokens every one of them must give
GOLD = [
    (["doesn't work", "does n't work", "doesn 't work", "does n 't work"], ["does", "n't", "work"]),
    (["can't stop", "ca n't stop", "can 't stop", "ca n 't stop"], ["ca", "n't", "stop"]),
    (["won't go", "wo n't go", "won 't go"], ["wo", "n't", "go"]),
    (["it's fine", "it 's fine", "it ' s fine", "it\u2019s fine"], ["it", "'s", "fine"]),
    (["the film's end", "the film 's end", "the film ' s end"], ["the", "film", "'s", "end"]),
    (["they're here", "they 're here", "they ' re here"], ["they", "'re", "here"]),
    (["i'm sure", "i 'm sure", "i ' m sure"], ["i", "'m", "sure"]),
    (["we'll see", "we 'll see", "we ' ll see"], ["we", "'ll", "see"]),
    (["you've won", "you 've won", "you ' ve won"], ["you", "'ve", "won"]),
    (["he'd left", "he 'd left", "he ' d left"], ["he", "'d", "left"]),
    (['he said "no."', "he said `` no . ''", 'he said " no . "', "he said \u201cno.\u201d"],
     ["he", "said", '"', "no", ".", '"']),
    (["it is _very_ good .", "it is very good ."], ["it", "is", "very", "good", "."]),
    (["a snake_case name"], ["a", "snake_case", "name"]),
    (["it's a film that doesn't work.", "it 's a film that does n't work .",
      "it ' s a film that does n 't work .", "it 's a film that doesn 't work ."],
     ["it", "'s", "a", "film", "that", "does", "n't", "work", "."]),
]


@pytest.mark.parametrize("forms,expected", GOLD, ids=[forms[0] for forms, _ in GOLD])
def test_every_form_gives_the_ptb_tokens(forms, expected):
    for form in forms:
        assert treebank_tokens(form) == expected, form
        assert treebank_tokens(" ".join(expected)) == expected


def test_case_is_kept_when_asked_and_clitics_still_split():
    keep = Tokenizer("treebank", lowercase=False)
    assert keep("Don't stop") == ["Do", "n't", "stop"] == keep("Do n't stop") == keep("Don 't stop")
    assert Tokenizer("treebank")("Don 't STOP") == ["do", "n't", "stop"]


def test_the_treebank_tokenizer_refuses_another_language_naming_moses():
    with pytest.raises(ValueError, match="kind=moses"):
        Tokenizer("treebank", lang="fr")


def test_a_non_converging_sentence_stops_after_a_few_rounds():
    """The one book sentence whose first round is not a fixed point still gives a fixed point."""
    text = "i'm going to crown the victor with the what-d'ye-call-'ems."
    tokens = treebank_tokens(text)
    assert treebank_tokens(" ".join(tokens)) == tokens


# --- the real data: task files of every family and raw book text --------------------------------------------

FAMILIES = ["MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC", "SICKRelatedness", "STS12", "STS13", "STS14",
            "STS15", "STS16", "STSBenchmark"]
SAMPLE = 1500  # sentences per task (a sample: every sentence of every file was checked once, when this was written)


def _data_root() -> Path:
    if not os.environ.get("SENTENCE_DATA"):
        pytest.skip("SENTENCE_DATA not set")
    return Path(os.environ["SENTENCE_DATA"])


def _sample(sentences: list[str]) -> list[str]:
    unique = sorted(set(sentences))
    return random.Random(0).sample(unique, min(SAMPLE, len(unique)))


@pytest.fixture(scope="module")
def task_text() -> dict[str, list[str]]:
    root = _data_root()
    return {name: _sample(TASKS[name].loader(root).sentences()) for name in FAMILIES}


@pytest.fixture(scope="module")
def book_text() -> list[str]:
    sentences = [s for path in list_documents(ROOT / "assets" / "books" / "train")[:4]
                 for s in split_sentences(read_document(path))]
    return _sample(sentences)


@pytest.mark.slow
@pytest.mark.real_data
@pytest.mark.parametrize("name", FAMILIES)
def test_task_text_is_a_fixed_point_after_a_single_pass(task_text, name):
    """Tokenising a task file's tokens again changes nothing, without the safety loop."""
    moved = [s for s in task_text[name] if single_pass(" ".join(single_pass(s.lower()))) != single_pass(s.lower())]
    assert moved == []


@pytest.mark.slow
def test_book_text_is_a_fixed_point(book_text):
    tokenizer = Tokenizer("treebank")
    moved = [s for s in book_text if tokenizer(" ".join(tokenizer(s))) != tokenizer(s)]
    assert moved == []


def _known_share(sentences: list[str], tokenizer: Tokenizer, words: frozenset[str]) -> float:
    tokens = [t for s in sentences for t in tokenizer(s)]
    return sum(t in words for t in tokens) / len(tokens)


@pytest.fixture(scope="module")
def glove() -> frozenset[str]:
    return frozenset(glove_words())


@pytest.mark.slow
@pytest.mark.real_data
def test_glove_knows_more_task_tokens_than_with_moses_or_whitespace(task_text, glove):
    treebank, moses, whitespace = Tokenizer("treebank"), Tokenizer("moses"), Tokenizer("whitespace")
    every = [s for name in FAMILIES for s in task_text[name]]
    assert _known_share(every, treebank, glove) > _known_share(every, moses, glove)
    for name in FAMILIES:  # the files' own tokens (what SentEval's reference clients read) never do better
        assert _known_share(task_text[name], treebank, glove) >= _known_share(task_text[name], whitespace, glove), name


def test_glove_knows_more_book_tokens_than_with_moses(book_text, glove):
    """Moses leaves raw negations as ``doesn 't``: GloVe has no ``'t``."""
    treebank, moses = Tokenizer("treebank"), Tokenizer("moses")
    assert _known_share(book_text, treebank, glove) > _known_share(book_text, moses, glove) + 0.003
