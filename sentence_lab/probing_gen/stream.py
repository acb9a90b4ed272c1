"""Pass 1 over the corpus: the training pipeline's preparation (``sentence_lab.text.corpus_prep``: files -> sentences ->
token
ids on disk, in worker processes), read back as the generator's tables.

Every sentence feeds the frequency tables (unigrams; bigrams when OddManOut is asked for); the eligible ones
(``min_tokens``..``max_tokens``) are read from the memory-mapped ids by the later passes, so memory does not grow
with the corpus beyond the tables. Word ids are numbered in the order words first occur, as the generator's
tables always were, so its output does not depend on how the pipeline numbers words.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from sentence_lab.text.corpus_formats import check_format, list_corpus_files
from sentence_lab.text.corpus_prep import PreparedSplit, TokenRules, open_prepared, prepare_corpus
from sentence_lab.text.documents import DOCUMENT_SUFFIXES

# Every sentence is prepared whole: the generator chooses its eligible lengths itself.
_NO_CUT = 2**31 - 1
_BIGRAM_CHUNK = 1 << 21


def corpus_documents(corpus: str | Path, max_documents: int | None = None, corpus_format: str = "documents",
                     files: str | None = None) -> list[Path]:
    """A folder (searched recursively: the format's files, or those matching the glob ``files``) or one file."""
    check_format(corpus_format)
    path = Path(corpus)
    if path.is_file():
        if files is None and not path.name.endswith(DOCUMENT_SUFFIXES):
            raise ValueError(f"corpus={path}: expected a .txt or .txt.xz file, or a folder of them")
        found = [path]
    elif path.is_dir() and files is not None:
        found = sorted(p for p in path.glob(files) if p.is_file())
        if not found:
            raise FileNotFoundError(f"no file under corpus={path} matches files={files}: give a glob relative to "
                                    "the corpus folder, e.g. '**/*.fr*'")
    elif path.is_dir():
        found = list_corpus_files(path, corpus_format)
    else:
        raise FileNotFoundError(f"corpus={path} does not exist: give a folder of .txt/.txt.xz documents or one file")
    return found[:max_documents] if max_documents else found


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
        self.add_keys((a[:-1] << 32) | a[1:])

    def add_keys(self, keys: np.ndarray) -> None:
        """Add bigrams already encoded as ``left << 32 | right``."""
        if len(keys):
            self._pending.append(np.asarray(keys, dtype=np.int64))
            self._pending_n += len(keys)
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

    def finish(self) -> BigramCounter:
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
    """Unigram counts, word ids (first occurrence first) and (optionally) bigram counts of every sentence of a
    prepared corpus, and its sentences of ``min_tokens``..``max_tokens`` tokens."""

    def __init__(self, words: list[str], counts: np.ndarray, split: PreparedSplit, bigrams: bool,
                 min_tokens: int, max_tokens: int, documents_per_file: list[int] | None = None) -> None:
        self.split = split
        self.documents_per_file = documents_per_file or []  # in the order of the prepared files
        lengths = np.diff(split.offsets)
        self.sentences, self.tokens = len(lengths), int(split.offsets[-1])
        self.eligible_rows = np.flatnonzero((lengths >= min_tokens) & (lengths <= max_tokens))
        self.eligible = len(self.eligible_rows)
        present, first = np.unique(np.asarray(split.ids), return_index=True)
        by_first = present[np.argsort(first, kind="stable")]
        self.words = np.asarray(words, dtype=object)
        self.ids: dict[str, int] = {words[w]: k for k, w in enumerate(by_first.tolist())}
        self.unigrams: Counter = Counter({words[w]: int(counts[w]) for w in by_first.tolist()})
        self.bigrams = self._count_bigrams(by_first) if bigrams else None

    def _count_bigrams(self, by_first: np.ndarray) -> BigramCounter:
        renumber = np.zeros(len(self.words), dtype=np.int64)
        renumber[by_first] = np.arange(len(by_first))
        ids, starts = self.split.ids, np.asarray(self.split.offsets[1:-1])
        counter = BigramCounter()
        for lo in range(0, max(len(ids) - 1, 0), _BIGRAM_CHUNK):
            hi = min(lo + _BIGRAM_CHUNK + 1, len(ids))
            chunk = renumber[np.asarray(ids[lo:hi])]
            keys = (chunk[:-1] << 32) | chunk[1:]
            ends = starts[(starts > lo) & (starts < hi)] - 1 - lo  # a pair across a sentence start is no bigram
            counter.add_keys(np.delete(keys, ends))
        return counter.finish()

    def eligible_sentences(self) -> Iterator[tuple[int, list[str]]]:
        """The eligible sentences' (document, tokens), in corpus order."""
        ids, offsets, words, docs = self.split.ids, self.split.offsets, self.words, self.split.doc_ids
        for row in self.eligible_rows.tolist():
            yield int(docs[row]), words[np.asarray(ids[offsets[row]:offsets[row + 1]])].tolist()


def prepare_tables(files: list[Path], folder: Path, tokenizer_kind: str, lowercase: bool, bigrams: bool,
                   min_tokens: int, max_tokens: int, workers: int = 1, progress: bool = True, lang: str = "en",
                   corpus_format: str = "documents") -> CorpusTables:
    """Tokenise every document once, through the training pipeline, into ``folder`` (which must not exist), and
    read the tables back from it."""
    rules = TokenRules(tokenizer=tokenizer_kind, lowercase=lowercase, min_tokens=1, max_tokens=_NO_CUT,
                       corpus_format=corpus_format, lang=lang)
    manifest = prepare_corpus({"train": files}, rules, folder, workers=workers, show_progress=progress)
    words, counts, splits = open_prepared(folder, ["train"])
    return CorpusTables(words, counts, splits["train"], bigrams, min_tokens, max_tokens,
                        manifest["splits"]["train"]["file_documents"])
