"""The forms a corpus comes in, each read as a stream of documents (lists of sentences).

- ``documents``: each ``.txt`` / ``.txt.xz`` file is one document, split into sentences
(``sentence_lab.text.documents``);
- ``lines``: ``.txt`` / ``.txt.xz`` files of one sentence per line, a blank line ending a document;
- ``jsonl``: ``.jsonl`` / ``.jsonl.xz`` files, each record's ``text_field`` one document, split into sentences;
- ``parquet``: ``.parquet`` files, each row's ``text_field`` column one document, split into sentences.

Files are read as they stream (a line, a record or a row group at a time), except ``documents``, whose files are
single books. Within a folder the files are taken in sorted path order, which is the corpus order.
"""
from __future__ import annotations

import gzip
import io
import json
import lzma
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pyarrow.parquet as pq

from sentence_lab.text.documents import MAX_NOT_TEXT, list_documents, not_text_share, read_document, split_sentences

CORPUS_FORMATS = ("documents", "lines", "jsonl", "parquet")
SUFFIXES = {"documents": (".txt", ".txt.xz"), "lines": (".txt", ".txt.xz"), "jsonl": (".jsonl", ".jsonl.xz"),
            "parquet": (".parquet",)}
_SNIFF_CHARS = 65536


def check_format(corpus_format: str) -> None:
    if corpus_format not in CORPUS_FORMATS:
        raise ValueError(f"unknown data.corpus_format {corpus_format!r}: use one of {CORPUS_FORMATS}")


def list_corpus_files(folder: str | Path, corpus_format: str = "documents") -> list[Path]:
    """The corpus files below ``folder`` for ``corpus_format``, in sorted path order."""
    check_format(corpus_format)
    if corpus_format == "documents":
        return list_documents(folder)
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(
            f"corpus folder {root} does not exist: set paths.data_dir (env SENTENCE_DATA) or data.train_dir"
        )
    suffixes = SUFFIXES[corpus_format]
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(suffixes))
    if not files:
        raise FileNotFoundError(f"no {' or '.join(suffixes)} files under {root} for data.corpus_format="
                                f"{corpus_format}: point data.train_dir at them or set data.corpus_format")
    return files


def read_documents(path: Path, corpus_format: str = "documents", text_field: str = "text") -> Iterator[list[str]]:
    """The documents of one corpus file, each as its list of sentences (possibly empty)."""
    check_format(corpus_format)
    if corpus_format == "documents":
        yield split_sentences(read_document(path))
    elif corpus_format == "lines":
        yield from _line_documents(path)
    elif corpus_format == "jsonl":
        yield from _jsonl_documents(path, text_field)
    else:
        yield from _parquet_documents(path, text_field)


def _open_text(path: Path) -> IO[str]:
    """A text stream over the file (decompressed when it ends in ``.xz`` or ``.gz``); a file that is not text is
    refused in one line, judged on its first characters."""
    raw = lzma.open(path, "rb") if path.name.endswith(".xz") else \
        gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")
    stream = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
    try:
        head = stream.read(_SNIFF_CHARS)
    except (lzma.LZMAError, gzip.BadGzipFile, EOFError) as err:
        stream.close()
        raise ValueError(f"{path}: not a readable compressed file ({err}): re-compress it or remove it from the "
                         "corpus folder") from None
    share = not_text_share(head.replace("\r", ""))
    if share > MAX_NOT_TEXT:
        stream.close()
        raise ValueError(f"{path}: not text ({share:.0%} of its first characters are undecodable bytes or control "
                         "codes): convert it to UTF-8 text or remove it from the corpus folder")
    stream.seek(0)
    return stream


def _line_documents(path: Path) -> Iterator[list[str]]:
    document: list[str] = []
    with _open_text(path) as stream:
        for line in stream:
            sentence = " ".join(line.split())
            if sentence:
                document.append(sentence)
            elif document:
                yield document
                document = []
    if document:
        yield document


def _jsonl_documents(path: Path, text_field: str) -> Iterator[list[str]]:
    with _open_text(path) as stream:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}, line {number}: not JSON ({err.msg}): fix or remove the line") from None
            text = record.get(text_field) if isinstance(record, dict) else None
            if not isinstance(text, str):
                raise ValueError(f"{path}, line {number}: no text field {text_field!r}: set data.text_field to the "
                                 "field that holds the text (this record has "
                                 f"{sorted(record)[:8] if isinstance(record, dict) else type(record).__name__})")
            yield split_sentences(text)


def _parquet_documents(path: Path, text_field: str) -> Iterator[list[str]]:
    table = pq.ParquetFile(path)
    if text_field not in table.schema_arrow.names:
        raise ValueError(f"{path}: no column {text_field!r}: set data.text_field to the column that holds the text "
                         f"(its columns: {table.schema_arrow.names[:8]})")
    for batch in table.iter_batches(batch_size=1024, columns=[text_field]):
        for text in batch.column(0).to_pylist():
            yield split_sentences(text) if text else []
