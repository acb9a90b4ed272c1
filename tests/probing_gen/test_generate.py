"""The generator end to end on two shipped public-domain books, and its output read by the evaluation engine."""
import json
import lzma
import re
from collections import Counter
from pathlib import Path

import pytest

from sentence_lab.evaluation.runner import load_tasks
from sentence_lab.probing_gen.__main__ import main, parse_settings
from sentence_lab.probing_gen.generate import generate
from tests.helpers.small_filesystem import fill, small_filesystem

ROOT = Path(__file__).resolve().parents[2]
BOOKS = ROOT / "assets" / "books" / "train"
SIZES = {"tr": 600, "va": 60, "te": 60}


def read_rows(path: Path) -> list[tuple[str, ...]]:
    return [tuple(line.rstrip("\n").split("\t")) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def surface_set(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("probing_surface")
    settings = parse_settings([f"corpus={BOOKS}", f"out={out}", "max_documents=2", "parser=none", "progress=false",
                               "train=600", "dev=60", "test=60", "wc_rank_start=200", "wc_words=30",
                               "tasks=[Length,WordContent,BigramShift,CoordinationInversion]"])
    generate(settings)
    return out


@pytest.mark.slow
def test_meta_counts_match_the_files_and_classes_are_balanced(surface_set):
    meta = json.loads((surface_set / "meta.json").read_text())
    assert meta["tagger_parser"] is None and meta["source"]["documents"] == 2
    assert set(meta["tasks"]) == {"Length", "WordContent", "BigramShift", "CoordinationInversion"}
    for task, entry in meta["tasks"].items():
        rows = read_rows(surface_set / entry["file"])
        counts = {s: Counter(label for split, label, _ in rows if split == s) for s in SIZES}
        assert {s: dict(c) for s, c in counts.items()} == entry["counts"], task
        for s, c in counts.items():
            assert len(set(c.values())) == 1, f"{task} {s} not balanced: {c}"  # equal count per class
            if task in ("Length", "BigramShift"):  # two books fill these
                assert sum(c.values()) >= SIZES[s] - len(c), task
        assert all(5 <= len(sentence.split()) <= 28 for _, _, sentence in rows)
        sentences = [sentence for _, _, sentence in rows]
        assert len(sentences) == len(set(sentences)), f"{task}: a sentence used twice"
    assert "heuristic" in meta["tasks"]["CoordinationInversion"]["method"]
    assert "approximation" in meta["tasks"]["CoordinationInversion"]


def test_length_labels_are_the_bins(surface_set):
    for _, label, sentence in read_rows(surface_set / "sentence_length.txt"):
        assert int(label) == (len(sentence.split()) - 5) // 4


def test_word_content_sentences_hold_exactly_their_word(surface_set):
    rows = read_rows(surface_set / "word_content.txt")
    words = {label for _, label, _ in rows}
    assert len(words) == 30
    for _, label, sentence in rows:
        hits = [t for t in sentence.split() if t in words]
        assert hits == [label]


def test_modified_and_intact_sentences_never_share_a_source(surface_set):
    for name in ("bigram_shift.txt", "coordination_inversion.txt"):
        rows = read_rows(surface_set / name)
        bags = {label: {tuple(sorted(s.lower().split())) for _, row_label, s in rows if row_label == label}
                for label in ("O", "I")}
        assert not bags["O"] & bags["I"], name  # no sentence in both original and modified form


def test_generated_set_loads_in_the_evaluation_engine(surface_set):
    loaded = {t.spec.name: t for t in load_tasks(["Length", "BigramShift", "Tense"], "/nonexistent",
                                                 probing=f"generated:{surface_set}")}
    length = loaded["Length"].data
    assert length.nclasses == 6 and length.info["layout"] == "generated"
    assert len(length.splits["train"]) == 600 and len(length.splits["test"]) == 60
    assert loaded["BigramShift"].data.nclasses == 2
    assert loaded["Tense"].missing and "probing_gen" in loaded["Tense"].error  # not generated: said so


def test_length_baseline_reads_length_off_a_generated_set(surface_set):
    from sentence_lab.evaluation.encoders.baselines import LengthEncoder
    from sentence_lab.evaluation.protocol import ProtocolParams
    from sentence_lab.evaluation.runner import run_task
    from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache

    (task,) = load_tasks(["Length"], "/nonexistent", probing=f"generated:{surface_set}")
    result = run_task(task, EmbeddingCache(LengthEncoder()), ProtocolParams(l2_grid=(1e-5,)))
    assert result["acc"] > 50  # the paper: 100; chance 16.7; the uncentred count gets ~30 here


def test_the_shipped_default_set_is_what_auto_falls_back_to(tmp_path):
    loaded = load_tasks(["Length", "WordContent"], tmp_path, probing="auto")
    for task in loaded:
        assert task.data is not None, task.error
        assert task.data.info["layout"] == "generated" and "books-en" in task.data.info["probing_set"]
    senteval_only = load_tasks(["Length"], tmp_path, probing="senteval")
    assert senteval_only[0].missing


def test_cli_errors_are_one_line_and_exit_2(tmp_path, capsys):
    assert main([f"corpus={tmp_path / 'nowhere'}", f"out={tmp_path / 'o'}"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main([f"corpus={BOOKS}", f"out={tmp_path / 'o'}", "trian=5"]) == 2
    err = capsys.readouterr().err
    assert "trian" in err and "valid settings" in err and len(err.strip().splitlines()) == 1
    assert main([f"corpus={BOOKS}"]) == 2
    assert "missing setting(s) out" in capsys.readouterr().err
    assert main([f"corpus={BOOKS}", f"out={tmp_path / 'o'}", "tasks=[Lenght]"]) == 2
    assert "unknown task" in capsys.readouterr().err


def test_too_little_text_is_refused_with_the_counts_and_writes_no_task(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "short.txt").write_text("The old man saw the red river today.\n\nA young woman walked over the bridge.\n")
    out = tmp_path / "out"
    code = main([f"corpus={corpus}", f"out={out}", "parser=none", "progress=false", "tasks=[Length,BigramShift]",
                 "train=100", "dev=10", "test=10"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "2 sentences of 5-28 tokens, against 120 asked per task" in err and "of 100, va 0 of 10, te 0 of 10" in err
    assert sorted(p.name for p in out.iterdir()) == ["meta.json"]  # no task file that evaluate.py would refuse


def test_the_shipped_set_has_the_tokens_training_text_has():
    """Regenerated with the treebank tokenizer: ``do n't``, never Moses' ``don 't`` (issue 20); by generator version 3,
    each task balanced within each book, with its floors and source-only baseline (issue 74)."""
    shipped = ROOT / "assets" / "probing" / "books-en"
    meta = json.loads((shipped / "meta.json").read_text())
    assert meta["tokenizer"]["kind"] == "treebank" and meta["generator"]["version"] == 3
    assert meta["source"]["sources"]["balance_by"] == "document"
    for task, entry in meta["tasks"].items():
        assert set(entry["floors"]) >= {"majority", "length", "nb_uni_tfidf", "nb_bi_tfidf"}, task
        if "balance" not in entry:  # balanced within each book: the book alone tells the label no better than chance
            assert abs(entry["source_baseline"]["document"] - entry["source_baseline"]["majority"]) <= 2, task
    text = lzma.decompress((shipped / "past_present.txt.xz").read_bytes()).decode("utf-8")
    assert " n't " in text and not re.search(r"\w+n 't ", text)


def test_a_full_disk_is_one_line_and_exit_4(tmp_path, capsys):
    with small_filesystem(tmp_path, "1m") as small:
        fill(small)
        code = main([f"corpus={BOOKS}", f"out={small / 'set'}", "max_documents=1", "parser=none", "progress=false",
                     "train=60", "dev=6", "test=6", "tasks=[Length]"])
    err = capsys.readouterr().err.strip()
    assert code == 4 and len(err.splitlines()) == 1, err
    assert err.startswith(f"error: could not write {small}") and "No space left on device" in err
