"""Pass 1 over the corpus: documents -> sentences -> tokens, streamed once.

Every sentence feeds the frequency tables (unigrams; bigrams when OddManOut is asked for); the eligible
ones (``min_tokens``..``max_tokens``) are spooled to a plain-text file that the later passes read, so
memory does not grow with the corpus beyond the tables.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Iterator

import numpy as np

from sentence_lab.text.documents import DOCUMENT_SUFFIXES, list_documents, read_document, split_sentences
from sentence_lab.text import Tokenizer
from sentence_lab.text.processes import ordered_map


def corpus_documents(corpus: str | Path, max_documents: int | None = None) -> list[Path]:
    """A folder (searched recursively) or one ``.txt``/``.txt.xz`` file."""
    path = Path(corpus)
    if path.is_file():
        if not path.name.endswith(DOCUMENT_SUFFIXES):
            raise ValueError(f"corpus={path}: expected a .txt or .txt.xz file, or a folder of them")
        files = [path]
    elif path.is_dir():
        files = list_documents(path)
    else:
        raise FileNotFoundError(f"corpus={path} does not exist: give a folder of .txt/.txt.xz documents or one file")
    return files[:max_documents] if max_documents else files


def _tokenize_document(args: tuple[str, dict]) -> list[list[str]]:
    path, tokenizer_settings = args
    tokenizer = Tokenizer(**tokenizer_settings)
    return [tokens for tokens in (tokenizer(s) for s in split_sentences(read_document(Path(path)))) if tokens]


def tokenized_documents(files: list[Path], tokenizer: Tokenizer, workers: int = 1) -> Iterator[list[list[str]]]:
    """Each document's tokenised sentences, in corpus order; ``workers > 1`` tokenises in processes."""
    jobs = [(str(p), tokenizer.to_dict()) for p in files]
    yield from ordered_map(_tokenize_document, jobs, workers)


class BigramCounter:
    """Bigram counts over word ids as sorted int64 keys (``left << 32 | right``), merged chunk by chunk."""

    def __init__(self, chunk: int = 2_000_000) -> None:
        self.keys = np.zeros(0, dtype=np.int64)
        self.counts = np.zeros(0, dtype=np.int64)
        self._pending: list[np.ndarray] = []
        self._pending_n = 0
        self.chunk = chunk

    def add(self, ids: list[int]) -> None:
        if len(ids) < 2:
            return
        a = np.asarray(ids, dtype=np.int64)
        self._pending.append((a[:-1] << 32) | a[1:])
        self._pending_n += len(a) - 1
        if self._pending_n >= self.chunk:
            self._merge()

    def _merge(self) -> None:
        if not self._pending:
            return
        new_keys, new_counts = np.unique(np.concatenate(self._pending), return_counts=True)
        keys = np.concatenate([self.keys, new_keys])
        counts = np.concatenate([self.counts, new_counts])
        order = np.argsort(keys, kind="stable")
        keys, counts = keys[order], counts[order]
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        self.keys, self.counts = keys[starts], np.add.reduceat(counts, starts)
        self._pending, self._pending_n = [], 0

    def finish(self) -> "BigramCounter":
        self._merge()
        return self

    def count(self, left: np.ndarray | int, right: np.ndarray | int) -> np.ndarray:
        """Counts of the bigrams (left[i], right[i]); 0 for unseen ones."""
        query = (np.asarray(left, dtype=np.int64) << 32) | np.asarray(right, dtype=np.int64)
        pos = np.searchsorted(self.keys, query)
        pos = np.minimum(pos, max(len(self.keys) - 1, 0))
        found = self.keys[pos] == query if len(self.keys) else np.zeros(np.shape(query), dtype=bool)
        return np.where(found, self.counts[pos] if len(self.keys) else 0, 0)

    def followers(self, left: int) -> tuple[np.ndarray, np.ndarray]:
        """(right ids, counts) of every bigram starting with ``left``."""
        lo = np.searchsorted(self.keys, np.int64(left) << 32)
        hi = np.searchsorted(self.keys, np.int64(left + 1) << 32)
        return (self.keys[lo:hi] & 0xFFFFFFFF), self.counts[lo:hi]

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.counts.nbytes)


class CorpusTables:
    """Unigram counts, word ids and (optionally) bigram counts of every sentence of the corpus."""

    def __init__(self, bigrams: bool) -> None:
        self.unigrams: Counter = Counter()
        self.ids: dict[str, int] = {}
        self.bigrams = BigramCounter() if bigrams else None
        self.sentences = 0
        self.tokens = 0
        self.eligible = 0

    def word_id(self, word: str) -> int:
        wid = self.ids.get(word)
        if wid is None:
            wid = self.ids[word] = len(self.ids)
        return wid

    def add(self, tokens: list[str]) -> None:
        self.unigrams.update(tokens)
        self.sentences += 1
        self.tokens += len(tokens)
        if self.bigrams is not None:
            self.bigrams.add([self.word_id(t) for t in tokens])


def spool_corpus(files: list[Path], spool: Path, tables: CorpusTables, min_tokens: int, max_tokens: int,
                 tokenizer: Tokenizer, workers: int = 1, progress=None) -> None:
    """Tokenise every document once: count everything, write the eligible sentences to ``spool``."""
    with open(spool, "w", encoding="utf-8") as out:
        for sentences in tokenized_documents(files, tokenizer, workers):
            for tokens in sentences:
                tables.add(tokens)
                if min_tokens <= len(tokens) <= max_tokens:
                    out.write(" ".join(tokens) + "\n")
                    tables.eligible += 1
            if progress is not None:
                progress()
    if tables.bigrams is not None:
        tables.bigrams.finish()


def read_spool(spool: Path) -> Iterator[list[str]]:
    with open(spool, encoding="utf-8") as f:
        for line in f:
            yield line.split()
