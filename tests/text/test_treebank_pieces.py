"""``treebank_tokens`` (a remembered piece at a time) gives exactly the tokens of ``reference_tokens`` (the Treebank
over the whole text): on hand-picked texts where the Treebank reads context (the start, the end, quotes, clitics,
contractions), on random strings of the characters its rules look at, and (with ``SENTENCE_DATA``) on SentEval's
task files, lowercased as the tokenizer reads them, and the Gutenberg corpus (every 8th book; all of it with
``SENTENCE_LAB_WHOLE_CORPUS=1``, as issue 34 asks before a faster tokenizer is taken)."""
from __future__ import annotations

import os
import random
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from sentence_lab.tasks.registry import TASKS
from sentence_lab.text.documents import list_documents, read_document, split_sentences
from sentence_lab.text.treebank import reference_tokens, treebank_tokens

ROOT = Path(__file__).resolve().parents[2]

CONTEXT = [
    "", " ", "word", '"', "'", ".", "...", "a.", "(a.)", "mr. smith came.", "he said, \"no.\"", "\"no,\" he said.",
    "it ended._]", "[illustration: _the cook._]", "what?\u201d", "(see below.)]'", "end.  \t", "at 3,000 feet: 5:30,",
    "last:", "first,", "cannot", "wanna go", "gonna", "'tis true", "'twas so", "d'ye see", "more'n that",
    "dogs' tails", "the dogs'", "it 's", "does n't", "does n 't work", "ca n't", "' hello '", "''quoted''",
    "``quoted''", "\u00abbonjour\u00bb", "\u2018single\u2019", "a--b -- c", "x & y; z @ w # 1 $ 2 % 3",
    "wait\u2014no\u2013yes", "*stars*", "<tag>{brace}[bracket]", "what-d'ye-call-'ems.", "o'clock", "ma'am.",
    "\u201che said\u201d.", "'hello", "hello'", "a .", ". a", "..", "a...", "'s", "n't", "'", "\"'\"", "etc.)",
    "yes, no; maybe: 3, 4: why? now! then", "cannot, gonna; wanna? lemme! gotta: gimme, x", "na\u00efve, x",
    "12: 30, 4; 5? 6! x", "x,, y", "a,b c", ",x", "k, ", "\u00e9t\u00e9! x", "\u00b2, x", "Mr, x",
]


def test_context_cases_give_the_reference_tokens():
    for text in CONTEXT:
        for form in (text, text.upper(), text + " .", "\" " + text, text + "'\"", "(" + text + ")"):
            assert treebank_tokens(form) == reference_tokens(form), form


@pytest.mark.slow
def test_random_strings_of_the_characters_the_rules_read_give_the_reference_tokens():
    rng = random.Random(0)
    alphabet = list("ab tn's.,:;?!\"'`()[]{}<>_-*&$%#@0123\t\n  \u201c\u201d\u2018\u2019\u00bb")
    alphabet += ["n't", "cannot", "Gonna", "lemme", "wanna", "'tis", "..."]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24)))
        assert treebank_tokens(text) == reference_tokens(text), repr(text)


def _differing(sentences: list[str]) -> list[str]:
    return [s for s in sentences if treebank_tokens(s) != reference_tokens(s)]


def _book_differences(path: Path) -> tuple[int, list[str]]:
    sentences = [s.lower() for s in split_sentences(read_document(path))]
    return len(sentences), _differing(sentences)


def _in_two_processes(function, jobs: list) -> list:
    with ProcessPoolExecutor(max_workers=2) as pool:  # the two cores of the machines this runs on
        return list(pool.map(function, jobs))


def _data_root() -> Path:
    if not os.environ.get("SENTENCE_DATA"):
        pytest.skip("SENTENCE_DATA not set")
    return Path(os.environ["SENTENCE_DATA"])


@pytest.mark.slow
@pytest.mark.real_data
def test_the_gutenberg_corpus_gives_the_reference_tokens():
    books = list_documents(_data_root() / "corpora" / "gutenberg")
    chosen = books if os.environ.get("SENTENCE_LAB_WHOLE_CORPUS") else books[::16]  # 21 books, 40,000+ sentences
    results = _in_two_processes(_book_differences, chosen)
    count, differing = sum(n for n, _ in results), [s for _, bad in results for s in bad]
    assert len(books) == 331 and count > (700_000 if len(chosen) == len(books) else 30_000)
    assert differing == []


@pytest.mark.slow
@pytest.mark.real_data
def test_every_task_file_sentence_gives_the_reference_tokens():
    root = _data_root()
    names = ["MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC", "SICKRelatedness", "STS12", "STS13", "STS14",
             "STS15", "STS16", "STSBenchmark"]
    sentences = sorted({s.lower() for name in names for s in TASKS[name].loader(root).sentences()})
    assert len(sentences) > 50_000
    halves = _in_two_processes(_differing, [sentences[0::2], sentences[1::2]])
    assert halves == [[], []]
