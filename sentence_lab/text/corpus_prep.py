"""Streaming corpus preparation: files -> documents -> sentences -> token ids, written straight to disk.

Each corpus file is one job for a worker process (spawned; this module and what it imports load no torch). The
worker tokenises its file a document at a time and appends the ids, over the file's own word list, to raw files in
the preparation folder, so it holds one document and the file's word list. The main process merges the word counts
as jobs finish; when every training file is done, the words are ranked (most frequent first, ties alphabetical,
ids from 1; 0 is "not a training word") and each job's ids are re-mapped into one array per split. Nothing is held
whole in memory but the word list.

A prepared corpus is a folder of ``.npy`` arrays, no pickle: per split ``<split>.ids.npy`` (int32, every token),
``<split>.offsets.npy`` (int64, sentence starts and the end), ``<split>.doc_ids.npy`` (int32, each sentence's
document); ``words.json`` (the training word types) and ``counts.npy``; and ``manifest.json``, written last, which
``open_prepared`` checks every array against.
"""
from __future__ import annotations

import json
import time
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from sentence_lab.text.corpus_formats import read_documents
from sentence_lab.text.files import atomic_write_text
from sentence_lab.text.processes import ordered_map
from sentence_lab.text.tokenizer import Tokenizer

FORMAT_VERSION = 1
NOT_IN_TRAIN = "<not-in-train>"
_FLUSH_TOKENS = 1 << 20


class PreparedCorpusBroken(ValueError):
    """A prepared-corpus folder that does not load: truncated, half-written, or of another format."""


@dataclass(frozen=True)
class TokenRules:
    """How a sentence becomes tokens: the tokenizer, sentences under ``min_tokens`` dropped, the rest cut at
    ``max_tokens``; and how files are read (``corpus_format``, ``text_field``)."""

    tokenizer: str = "treebank"
    lowercase: bool = True
    min_tokens: int = 1
    max_tokens: int = 50
    corpus_format: str = "documents"
    text_field: str = "text"
    lang: str = "en"  # the tokenizer's language rules (Moses)
    model: str = ""  # tokenizer=huggingface: the model folder, and its tokenizer's fingerprint
    fingerprint: str = ""


@dataclass(frozen=True)
class FileJob:
    path: str
    out: str  # prefix of the job's raw files
    rules: TokenRules


@dataclass
class FileTokens:
    """What a worker returns for one file: its word types in first-seen order (local ids), their counts, sizes."""

    words: list[str]
    counts: np.ndarray
    tokens: int
    sentences: int
    documents: int


def tokenize_file(job: FileJob) -> FileTokens:
    """Tokenise one corpus file into ``<out>.ids`` / ``.lengths`` (per sentence) / ``.docs`` (sentences per
    document), raw int32, over the file's own word list."""
    rules = job.rules
    tokenizer = Tokenizer(rules.tokenizer, rules.lowercase, lang=rules.lang, model=rules.model,
                          fingerprint=rules.fingerprint)
    index: dict[str, int] = {}
    counts: list[int] = []
    ids, lengths, docs = array("i"), array("i"), array("i")
    n_tokens = n_sentences = n_documents = 0
    with open(job.out + ".ids", "wb") as ids_file, open(job.out + ".lengths", "wb") as lengths_file, \
            open(job.out + ".docs", "wb") as docs_file:
        def flush() -> None:
            for buffer, file in ((ids, ids_file), (lengths, lengths_file), (docs, docs_file)):
                buffer.tofile(file)
                del buffer[:]

        for document in read_documents(Path(job.path), rules.corpus_format, rules.text_field):
            kept = 0
            for sentence in document:
                tokens = tokenizer(sentence)
                if len(tokens) < rules.min_tokens:
                    continue
                tokens = tokens[: rules.max_tokens]
                for token in tokens:
                    i = index.get(token)
                    if i is None:
                        i = index[token] = len(counts)
                        counts.append(0)
                    counts[i] += 1
                    ids.append(i)
                lengths.append(len(tokens))
                n_tokens += len(tokens)
                kept += 1
            docs.append(kept)
            n_sentences += kept
            n_documents += 1
            if len(ids) >= _FLUSH_TOKENS:
                flush()
        flush()
    return FileTokens(list(index), np.asarray(counts, dtype=np.int64), n_tokens, n_sentences, n_documents)


class WordTable:
    """The training word types as jobs report them: a provisional id per word (first seen first) and its count."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.counts = np.zeros(1024, dtype=np.int64)

    def add(self, words: list[str], counts: np.ndarray) -> np.ndarray:
        """Merge one job's words and counts; returns its local -> provisional id map."""
        index = self.index
        local = np.fromiter((index.setdefault(w, len(index)) for w in words), dtype=np.int64, count=len(words))
        if len(index) > len(self.counts):
            grown = np.zeros(max(len(index), 2 * len(self.counts)), dtype=np.int64)
            grown[: len(self.counts)] = self.counts
            self.counts = grown
        np.add.at(self.counts, local, counts)
        return local

    def ranked(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """``(words, counts, final id of each provisional id)``: most frequent first, ties alphabetical; ids from 1,
        ``words[0]`` is ``NOT_IN_TRAIN``."""
        words = list(self.index)
        counts = self.counts[: len(words)]
        order = sorted(range(len(words)), key=lambda i: (-counts[i], words[i]))
        final = np.empty(len(words), dtype=np.int32)
        final[order] = np.arange(1, len(words) + 1, dtype=np.int32)
        return [NOT_IN_TRAIN] + [words[i] for i in order], np.concatenate([[0], counts[order]]), final


def _progress(show: bool) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                    TextColumn("{task.fields[tokens]:,} tokens, {task.fields[rate]:,.0f} tokens/s"),
                    TimeRemainingColumn(), disable=not show)


def _tokenize_split(files: list[Path], rules: TokenRules, folder: Path, split: str, workers: int,
                    on_file: Callable[[str, FileTokens, int], FileTokens]) -> list[tuple[str, FileTokens]]:
    """Each file's raw prefix and what ``on_file`` keeps of its result (called as each file is done)."""
    jobs = [FileJob(str(path), str(folder / f"{split}-{k:07d}"), rules) for k, path in enumerate(files)]
    return [(job.out, on_file(job.out, result, path.stat().st_size))
            for job, path, result in zip(jobs, files, ordered_map(tokenize_file, jobs, workers))]


class NpyAppender:
    """A ``.npy`` file of known dtype and length written front to back, a chunk at a time, through ordinary file
    writes: the process never maps the array, so its memory does not grow with the corpus (a ``w+`` memory map's
    dirty pages count in the process's memory until written back)."""

    def __init__(self, path: Path, dtype: type, length: int) -> None:
        self.dtype, self.length, self.written = np.dtype(dtype), length, 0
        self.file = open(path, "wb")
        np.lib.format.write_array_header_1_0(self.file, {"descr": np.lib.format.dtype_to_descr(self.dtype),
                                                         "fortran_order": False, "shape": (length,)})

    def append(self, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, dtype=self.dtype)
        self.file.write(values.data)
        self.written += len(values)

    def close(self) -> None:
        self.file.close()
        if self.written != self.length:
            raise ValueError(f"{self.file.name}: {self.written} values written for a length of {self.length}")


def _write_split(folder: Path, split: str, jobs: list[tuple[str, FileTokens]],
                 local_to_final: Callable[[str, FileTokens], np.ndarray]) -> dict[str, Any]:
    """Gather the jobs' raw files into the split's three arrays (re-mapping each job's ids), removing them."""
    n_tokens = sum(r.tokens for _, r in jobs)
    n_sentences = sum(r.sentences for _, r in jobs)
    ids = NpyAppender(folder / f"{split}.ids.npy", np.int32, n_tokens)
    offsets = NpyAppender(folder / f"{split}.offsets.npy", np.int64, n_sentences + 1)
    doc_ids = NpyAppender(folder / f"{split}.doc_ids.npy", np.int32, n_sentences)
    try:
        offsets.append(np.zeros(1))
        t, s, d = 0, 0, 0
        file_documents = []
        for prefix, result in jobs:
            local = np.fromfile(prefix + ".ids", dtype=np.int32)
            lengths = np.fromfile(prefix + ".lengths", dtype=np.int32)
            per_doc = np.fromfile(prefix + ".docs", dtype=np.int32)
            mapping = local_to_final(prefix, result)
            ids.append(mapping[local] if len(local) else local)
            offsets.append(t + np.cumsum(lengths, dtype=np.int64))
            doc_ids.append(np.repeat(np.arange(d, d + len(per_doc), dtype=np.int32), per_doc))
            t, s, d = t + len(local), s + len(lengths), d + len(per_doc)
            file_documents.append(len(per_doc))
            for suffix in (".ids", ".lengths", ".docs", ".map"):
                Path(prefix + suffix).unlink(missing_ok=True)
    finally:
        for array_ in (ids, offsets, doc_ids):
            array_.file.close()
    for array_ in (ids, offsets, doc_ids):
        array_.close()
    return {"tokens": t, "sentences": s, "documents": d, "file_documents": file_documents}


def prepare_corpus(splits: dict[str, list[Path]], rules: TokenRules, folder: Path, workers: int = 0,
                   key: str = "", show_progress: bool = True) -> dict:
    """Prepare ``splits`` (``train`` first: its words are the vocabulary; other splits' words not in it get id 0)
    into ``folder`` (created, must be empty). Returns the manifest, written last."""
    if "train" not in splits or next(iter(splits)) != "train":
        raise ValueError("prepare_corpus needs the 'train' split first: its words are the vocabulary")
    folder.mkdir(parents=True, exist_ok=False)
    started = time.perf_counter()
    table, jobs = WordTable(), {}
    seen = {"tokens": 0}
    total_bytes = sum(p.stat().st_size for files in splits.values() for p in files)
    with _progress(show_progress) as progress:
        task = progress.add_task("preparing the corpus", total=total_bytes, tokens=0, rate=0.0)

        def on_file(prefix: str, result: FileTokens, size: int) -> FileTokens:
            seen["tokens"] += result.tokens
            rate = seen["tokens"] / max(time.perf_counter() - started, 1e-9)
            progress.update(task, advance=size, tokens=seen["tokens"], rate=rate)
            return result

        def on_train_file(prefix: str, result: FileTokens, size: int) -> FileTokens:
            # The file's local -> provisional id map goes to disk beside its ids and its word list is dropped:
            # what stays in memory grows with the word types, not with the number of files.
            table.add(result.words, result.counts).astype(np.int32).tofile(prefix + ".map")
            on_file(prefix, result, size)
            return FileTokens([], result.counts[:0], result.tokens, result.sentences, result.documents)

        for split, files in splits.items():
            jobs[split] = _tokenize_split(files, rules, folder, split, workers,
                                          on_train_file if split == "train" else on_file)
    words, counts, final = table.ranked()
    index = table.index
    sizes = {}
    for split, done in jobs.items():
        if split == "train":
            sizes[split] = _write_split(folder, split, done,
                                        lambda prefix, r: final[np.fromfile(prefix + ".map", dtype=np.int32)])
        else:
            sizes[split] = _write_split(folder, split, done, lambda prefix, r: np.fromiter(
                (final[index[w]] if w in index else 0 for w in r.words), dtype=np.int32, count=len(r.words)))
    np.save(folder / "counts.npy", counts)
    atomic_write_text(folder / "words.json", json.dumps(words, ensure_ascii=False))
    seconds = time.perf_counter() - started
    manifest = {"format": FORMAT_VERSION, "key": key, "rules": rules.__dict__, "words": len(words),
                "splits": sizes, "seconds": round(seconds, 2),
                "tokens_per_second": round(sum(s["tokens"] for s in sizes.values()) / max(seconds, 1e-9))}
    atomic_write_text(folder / "manifest.json", json.dumps(manifest, indent=1))
    return manifest


@dataclass
class PreparedSplit:
    """One split of a prepared corpus, memory-mapped read-only."""

    ids: np.ndarray
    offsets: np.ndarray
    doc_ids: np.ndarray


def open_split(folder: Path, name: str) -> PreparedSplit:
    """One split's three arrays, memory-mapped read-only (not checked: ``open_prepared`` checks them)."""
    return PreparedSplit(*(np.load(folder / f"{name}.{part}.npy", mmap_mode="r", allow_pickle=False)
                           for part in ("ids", "offsets", "doc_ids")))


def open_prepared(folder: Path, split_names: Iterable[str]) -> tuple[list[str], np.ndarray, dict[str, PreparedSplit]]:
    """``(words, counts, splits)`` of a prepared corpus, each array memory-mapped; raises ``PreparedCorpusBroken``
    naming the folder when the manifest is missing or of another format, or an array does not match it."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
        if manifest.get("format") != FORMAT_VERSION:
            raise PreparedCorpusBroken(f"format {manifest.get('format')!r}, not {FORMAT_VERSION}")
        words = json.loads((folder / "words.json").read_text(encoding="utf-8"))
        counts = np.load(folder / "counts.npy", allow_pickle=False)
        if len(words) != manifest["words"] or len(counts) != len(words):
            raise PreparedCorpusBroken(f"{len(words)} words and {len(counts)} counts, the manifest says "
                                       f"{manifest['words']}")
        splits = {}
        for name in split_names:
            size = manifest["splits"][name]
            split = open_split(folder, name)
            arrays = [split.ids, split.offsets, split.doc_ids]
            expected = (size["tokens"], size["sentences"] + 1, size["sentences"])
            if tuple(len(a) for a in arrays) != expected or int(arrays[1][-1]) != size["tokens"]:
                raise PreparedCorpusBroken(f"{name} arrays of {tuple(len(a) for a in arrays)}, the manifest says "
                                           f"{expected}")
            splits[name] = split
    except PreparedCorpusBroken as err:
        raise PreparedCorpusBroken(f"{folder}: {err}") from None
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise PreparedCorpusBroken(f"{folder}: {type(err).__name__}: {err}") from None
    return words, counts, splits
