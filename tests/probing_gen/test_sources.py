"""Each sentence's source: its document and its group (the folder directly under the corpus)."""
from pathlib import Path

import pytest

from sentence_lab.probing_gen.sources import SAMPLED_DOCUMENTS, Sources, file_group, source_baseline


def corpus(tmp_path: Path) -> tuple[Path, list[Path]]:
    files = [tmp_path / "multi30k" / "train.fr", tmp_path / "newstest" / "en-fr" / "nt2014.fr",
             tmp_path / "newstest" / "en-fr" / "nt2015.fr", tmp_path / "loose.txt"]
    for f in files:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("x\n")
    return tmp_path, files


def test_a_group_is_the_folder_directly_under_the_corpus(tmp_path):
    root, files = corpus(tmp_path)
    assert [file_group(f, root) for f in files] == ["multi30k", "newstest", "newstest", "."]
    assert file_group(files[0], files[0]) == "."  # a corpus given as one file is one group


def test_documents_map_to_their_files_groups_and_units(tmp_path):
    root, files = corpus(tmp_path)
    sources = Sources(files, root, documents_per_file=[1, 2, 1, 3])  # documents 0 | 1 2 | 3 | 4 5 6
    assert [sources.group(d) for d in range(7)] == ["multi30k", "newstest", "newstest", "newstest", ".", ".", "."]
    assert [sources.unit(d) for d in range(7)] == list(range(7))  # by document, the default
    assert sources.sample_unit(5) == 5
    by_group = Sources(files, root, [1, 2, 1, 3], balance_by="group")
    assert by_group.unit(1) == by_group.unit(3) != by_group.unit(0) and by_group.sample_unit(2) == by_group.unit(2)
    assert {Sources(files, root, [1, 2, 1, 3], balance_by="none").unit(d) for d in range(7)} == {0}
    assert sources.describe()["groups"]["newstest"] == {"files": 2, "documents": 3}
    with pytest.raises(ValueError, match="balance_by=books: choose from"):
        Sources(files, root, [1, 2, 1, 3], balance_by="books")


def test_beyond_the_sampled_documents_one_sample_serves_the_corpus(tmp_path):
    root, files = corpus(tmp_path)
    many = Sources(files, root, [SAMPLED_DOCUMENTS, 1, 0, 0])
    assert many.unit(7) == 7 and many.sample_unit(7) == 0


def test_the_source_baseline_predicts_each_sources_training_majority(tmp_path):
    root, files = corpus(tmp_path)
    sources = Sources(files, root, [1, 1, 1, 1])  # one document a file: 0 multi30k, 1 2 newstest, 3 "."
    labels = {"tr": ["PRES", "PRES", "PAST", "PAST", "PAST", "PRES"], "te": ["PRES", "PAST", "PAST", "PRES"]}
    docs = {"tr": [0, 0, 1, 2, 2, 1], "te": [0, 1, 2, 3]}
    out = source_baseline(labels, docs, sources)
    # group: multi30k -> PRES, newstest -> PAST (3 of 4), "." unseen -> the training majority (a tie: PAST first)
    assert out == {"majority": 50.0, "group": 75.0, "document": 75.0}  # document 1 is a tie: PAST, right


def test_a_linked_file_belongs_to_the_folder_it_lies_in(tmp_path):
    elsewhere = tmp_path / "elsewhere" / "a.txt"
    elsewhere.parent.mkdir()
    elsewhere.write_text("x\n")
    (tmp_path / "corpus" / "news").mkdir(parents=True)
    link = tmp_path / "corpus" / "news" / "a.txt"
    link.symlink_to(elsewhere)
    assert file_group(link, tmp_path / "corpus") == "news"
