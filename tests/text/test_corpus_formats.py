"""Each corpus format read back as the documents and sentences it holds."""
from __future__ import annotations

import json
import lzma

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sentence_lab.text.corpus_formats import list_corpus_files, read_documents
from sentence_lab.text.documents import split_sentences

DOCS = ["The cat sat. It was happy!", "A dog barked twice. Then it slept."]


def test_lines_a_blank_line_ends_a_document(tmp_path):
    path = tmp_path / "c.txt.xz"
    path.write_bytes(lzma.compress(b"The cat sat.\n  It was   happy!\n\n\nA dog barked twice.\nThen it slept.\n"))
    assert list(read_documents(path, "lines")) == [["The cat sat.", "It was happy!"],
                                                  ["A dog barked twice.", "Then it slept."]]


def test_jsonl_and_parquet_read_one_document_per_record(tmp_path):
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps({"id": i, "body": d}) for i, d in enumerate(DOCS)) + "\n\n")
    pq.write_table(pa.table({"id": [0, 1], "body": DOCS}), tmp_path / "c.parquet")
    expected = [split_sentences(d) for d in DOCS]
    assert list(read_documents(tmp_path / "c.jsonl", "jsonl", "body")) == expected
    assert list(read_documents(tmp_path / "c.parquet", "parquet", "body")) == expected
    assert expected[0] == ["The cat sat.", "It was happy!"]


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_a_missing_text_field_names_the_setting(tmp_path, suffix):
    path = tmp_path / f"c.{suffix}"
    if suffix == "jsonl":
        path.write_text(json.dumps({"body": DOCS[0]}) + "\n")
    else:
        pq.write_table(pa.table({"body": DOCS}), path)
    with pytest.raises(ValueError, match="data.text_field"):
        list(read_documents(path, suffix, "text"))


def test_binary_lines_file_is_refused(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(bytes(range(256)) * 50)
    with pytest.raises(ValueError, match="not text"):
        list(read_documents(path, "lines"))


def test_files_are_listed_by_format(tmp_path):
    for name in ("b.jsonl", "a/c.jsonl.xz", "x.txt", "y.parquet"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    assert [p.relative_to(tmp_path).as_posix() for p in list_corpus_files(tmp_path, "jsonl")] == ["a/c.jsonl.xz",
                                                                                                    "b.jsonl"]
    with pytest.raises(FileNotFoundError, match="data.corpus_format"):
        list_corpus_files(tmp_path / "a", "parquet")
    with pytest.raises(ValueError, match="unknown data.corpus_format"):
        list_corpus_files(tmp_path, "csv")
