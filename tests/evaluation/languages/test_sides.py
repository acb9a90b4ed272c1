"""A model's second language (``sentence_lab.evaluation.languages.sides``): scored on its language's probing tasks
and on translation retrieval against the first, into ``sides[LANG]``; the first language's results untouched;
one-language encoders refused in one line; missing data recorded, never fatal."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sentence_lab.evaluation.encoders.text_encoders import HasLanguages
from sentence_lab.evaluation.languages.sides import NoSuchSide, rates_by_direction, side_languages
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.results import read_items, read_results
from sentence_lab.evaluation.suite import EvaluationSuite
from sentence_lab.tasks.tatoeba import load_retrieval_pairs
from sentence_lab.text.held_out import RETRIEVAL_SEED, hold_out
from tests.helpers.hash_encoder import HashEncoder
from tests.helpers.senteval_tree import make_senteval_tree

FAST = ProtocolParams(kfold=2, max_epoch=4, l2_grid=(1e-3,), device="cpu")
PAIRS = 40


def foreign(sentence: str) -> str:
    """The made-up language ``xx``: every word reversed."""
    return " ".join(word[::-1] for word in sentence.split())


class ReadsXx(HashEncoder):
    """The ``xx`` side: reverses each word back, so a translation gets its English sentence's vector."""

    def encode(self, sentences: list[str]) -> np.ndarray:
        return super().encode([foreign(s) for s in sentences])

    def describe(self) -> dict:
        return {"name": "hash-xx"}


class Bilingual(HashEncoder):
    """English and ``xx``; ``babel``: the ``xx`` side reads words as they are (it knows no translation)."""

    languages = ("en", "xx")

    def __init__(self, babel: bool = False) -> None:
        super().__init__()
        self.side = HashEncoder() if babel else ReadsXx()

    def in_language(self, language: str):
        return self if language == "en" else self.side


def write_side_data(root: Path) -> Path:
    """Tatoeba ``en-xx.tsv`` (distinct sentences, one repeated source) and a generated ``xx`` Length set."""
    rows = [f"word{i} goes home {i % 7} ." for i in range(PAIRS)]
    lines = [f"{s}\t{foreign(s)}" for s in rows] + [f"{rows[0]}\t{foreign(rows[1])}"]  # rows 0 and 1: not unique
    tatoeba = root / "parallel" / "tatoeba"
    tatoeba.mkdir(parents=True)
    (tatoeba / "en-xx.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    generated = root / "probing" / "generated-xx"
    generated.mkdir(parents=True)
    rng = np.random.default_rng(0)
    out = []
    for split, n in (("tr", 60), ("va", 20), ("te", 20)):
        for _ in range(n):
            length = int(rng.integers(2, 8))
            out.append(f"{split}\t{'short' if length < 5 else 'long'}\t{foreign(' '.join(['ab'] * length))}")
    (generated / "sentence_length.txt").write_text("\n".join(out) + "\n", encoding="utf-8")
    (generated / "meta.json").write_text(json.dumps({"language": "xx"}), encoding="utf-8")
    return root


@pytest.fixture
def root(tmp_path) -> Path:
    return write_side_data(make_senteval_tree(tmp_path / "data", xprobe=True))


def test_a_two_language_model_is_scored_on_both_sides(root, tmp_path):
    encoder = Bilingual()
    assert isinstance(encoder, HasLanguages) and not isinstance(HashEncoder(), HasLanguages)
    suite = EvaluationSuite(["Length", "Depth"], root, FAST, retrieval_held_out=20)
    doc = suite.run(encoder, tmp_path / "r.json")
    english = suite.run(HashEncoder(), tmp_path / "alone.json")
    assert doc["results"]["Length"] == {**english["results"]["Length"], **{k: doc["results"]["Length"][k] for k in
                                                                          ("seconds", "encode_seconds",
                                                                           "classifier_seconds")}}
    side = read_results(tmp_path / "r.json")["sides"]["xx"]
    assert side["encoder"]["language"] == "xx" and side["encoder"]["name"] == "hash[xx]"
    assert set(side["results"]) == {"Length", "Tatoeba"}
    assert "Depth" in side["skipped"] and "generated-xx" in side["skipped"]["Depth"]  # the set lacks it
    retrieval = side["results"]["Tatoeba"]
    # the xx side maps each translation to its sentence's vector: every pair found, both ways, both scores
    assert retrieval["error"] == {"cosine": {"en->xx": 0.0, "xx->en": 0.0}, "margin": {"en->xx": 0.0, "xx->en": 0.0}}
    assert retrieval["main_score"] == 0.0 and retrieval["lower_is_better"] and retrieval["n"] == 20
    assert retrieval["held_out"] == 20 and retrieval["candidates"] == PAIRS - 2 and "not LASER" in retrieval["note"]
    assert retrieval["baselines"]["random"]["cosine"]["en->xx"] > 70.0  # about 1 - 1/20
    assert set(retrieval["baselines"]["char_ngram"]) == {"cosine", "margin"}
    assert "Side `xx` (language xx)" in (tmp_path / "r.md").read_text()
    assert any(name.startswith("xx:Length/") for name in
               [f"{t}/{c}" for t, cols in read_items(tmp_path / "r.items.npz").items() for c in cols])


def test_retrieval_errs_where_the_side_knows_no_translation(root, tmp_path):
    doc = EvaluationSuite(["Length"], root, FAST, retrieval_held_out=20).run(Bilingual(babel=True), tmp_path / "r.json")
    error = doc["sides"]["xx"]["results"]["Tatoeba"]["error"]
    assert min(rate for rates in error.values() for rate in rates.values()) >= 50.0


def test_the_retrieval_pairs_are_the_held_out_draw_of_the_file(root):
    pairs = load_retrieval_pairs(root, "xx", 20)
    rows = [tuple(line.split("\t")) for line in
            (root / "parallel" / "tatoeba" / "en-xx.tsv").read_text(encoding="utf-8").splitlines()]
    held = hold_out(rows, 20, RETRIEVAL_SEED)
    assert list(zip(pairs.first, pairs.other)) == held.pairs
    assert "word0 goes home 0 ." not in pairs.first  # its source has two translations: never a query


def test_one_language_encoders_are_refused_in_one_line_and_auto_skips_them(root, tmp_path):
    with pytest.raises(NoSuchSide, match=r"sides=fr: the encoder has one language.*objective=jbi"):
        EvaluationSuite(["Length"], root, FAST, sides=["fr"]).run(HashEncoder(), tmp_path / "r.json")
    assert not (tmp_path / "r.json").exists()
    with pytest.raises(NoSuchSide, match="encodes en, xx"):
        side_languages(Bilingual(), ["de"])
    assert side_languages(Bilingual(), "none") == [] and side_languages(HashEncoder(), "auto") == []
    doc = EvaluationSuite(["Length"], root, FAST).run(HashEncoder(), tmp_path / "one.json")
    assert "sides" not in doc
    doc = EvaluationSuite(["Length"], root, FAST, sides="none").run(Bilingual(), tmp_path / "none.json")
    assert "sides" not in doc


def test_a_side_without_data_is_recorded_and_the_first_language_stands(tmp_path):
    root = make_senteval_tree(tmp_path / "data", xprobe=True)
    doc = EvaluationSuite(["Length"], root, FAST).run(Bilingual(), tmp_path / "r.json")
    assert doc["results"]["Length"]["main_score"] is not None
    side = doc["sides"]["xx"]
    assert side["results"] == {} and set(side["skipped"]) == {"Length", "Tatoeba"}
    assert "language=xx" in side["skipped"]["Length"] and "en-xx.tsv" in side["skipped"]["Tatoeba"]


def test_too_small_a_file_for_the_held_out_size_is_an_error_of_its_own(root, tmp_path):
    doc = EvaluationSuite(["Length"], root, FAST, retrieval_held_out=1000).run(Bilingual(), tmp_path / "r.json")
    assert "Length" in doc["sides"]["xx"]["results"]
    assert "only 38 pairs have both sides unique, against 1000" in doc["sides"]["xx"]["errors"]["Tatoeba"]


def test_error_rates_are_named_by_language_and_direction():
    rates = {"cosine x->y": 1.0, "cosine y->x": 2.0, "margin x->y": 3.0, "margin y->x": 4.0}
    assert rates_by_direction(rates, "en", "fr") == {"cosine": {"en->fr": 1.0, "fr->en": 2.0},
                                                     "margin": {"en->fr": 3.0, "fr->en": 4.0}}
