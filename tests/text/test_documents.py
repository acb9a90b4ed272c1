import lzma

import pytest

from sentence_lab.text.documents import list_documents, read_document, split_sentences


def test_split_sentences_joins_wrapped_lines_and_keeps_paragraph_breaks():
    text = "It was a dark\nnight. The rain fell.\n\nMr. Holmes\nsmiled."
    assert split_sentences(text) == ["It was a dark night.", "The rain fell.", "Mr. Holmes smiled."]


def test_documents_are_listed_in_path_order_and_xz_is_read(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "two.txt.xz").write_bytes(lzma.compress(b"Second book."))
    (tmp_path / "a.txt").write_text("First book.", encoding="utf-8")
    (tmp_path / "notes.md").write_text("not a document", encoding="utf-8")
    files = list_documents(tmp_path)
    assert [f.relative_to(tmp_path).as_posix() for f in files] == ["a.txt", "b/two.txt.xz"]
    assert [read_document(f) for f in files] == ["First book.", "Second book."]


def test_binary_data_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "garbage.txt"
    path.write_bytes(bytes(range(256)) * 20)
    with pytest.raises(ValueError, match="garbage.txt: not text"):
        read_document(path)
