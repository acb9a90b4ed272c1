"""Plain-text documents -> sentences -> token ids, in document order, cached on disk."""
from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from sentence_lab.text import SPECIALS, UNK_ID, Tokenizer, Vocab
from sentence_lab.text.documents import list_documents, read_document, split_sentences
from sentence_lab.text.glove import glove_words
from sentence_lab.text.processes import ordered_map

log = logging.getLogger(__name__)

CACHE_VERSION = 2
VOCAB_SOURCES = ("corpus", "glove", "corpus+glove")


@dataclass(frozen=True)
class CorpusSettings:
    """Everything that changes the tokenised corpus (the cache key) and the vocabulary drawn from it.

    The cache holds ids over *every* word type of the training documents; ``vocab_source``,
    ``vocab_size`` and ``min_count`` pick the model's vocabulary afterwards by a cheap re-mapping:
    ``corpus`` (the most frequent training words), ``glove`` (GloVe 6B's 400k words: no training
    word it knows is lost) or ``corpus+glove`` (the corpus vocabulary, then the other GloVe words).
    """

    tokenizer: str = "treebank"
    lowercase: bool = True
    min_tokens: int = 1
    max_tokens: int = 50
    vocab_size: int = 20000
    min_count: int = 1
    vocab_source: str = "corpus"

    def __post_init__(self) -> None:
        if self.min_tokens < 1 or self.max_tokens < self.min_tokens:
            raise ValueError(f"min_tokens={self.min_tokens}, max_tokens={self.max_tokens}: "
                             "need 1 <= data.min_tokens <= data.max_tokens")
        if self.vocab_source not in VOCAB_SOURCES:
            raise ValueError(f"unknown data.vocab_source {self.vocab_source!r}: use one of {VOCAB_SOURCES}")

    def tokenization(self) -> dict:
        """The settings that change the cached token ids (the vocabulary is chosen afterwards)."""
        return {"tokenizer": self.tokenizer, "lowercase": self.lowercase, "min_tokens": self.min_tokens,
                "max_tokens": self.max_tokens}


@dataclass
class TokenizedCorpus:
    """Sentences as one flat id array with offsets; ``doc_ids`` gives each sentence's document."""

    ids: np.ndarray  # int32 [total tokens]
    offsets: np.ndarray  # int64 [n_sentences + 1]
    doc_ids: np.ndarray  # int32 [n_sentences]

    def __len__(self) -> int:
        return len(self.doc_ids)

    def sentence(self, i: int) -> np.ndarray:
        return self.ids[self.offsets[i] : self.offsets[i + 1]]

    @property
    def n_documents(self) -> int:
        return int(self.doc_ids.max()) + 1 if len(self.doc_ids) else 0

    @classmethod
    def from_sentences(cls, documents: list[list[list[int]]]) -> "TokenizedCorpus":
        lengths = [len(s) for doc in documents for s in doc]
        ids = np.fromiter((t for doc in documents for s in doc for t in s), dtype=np.int32, count=sum(lengths))
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        doc_ids = np.repeat(np.arange(len(documents), dtype=np.int32), [len(d) for d in documents])
        return cls(ids, offsets, doc_ids)




def tokenize_document(path: Path, tokenizer: Tokenizer, min_tokens: int, max_tokens: int) -> list[list[str]]:
    text = read_document(path)
    out = []
    for sentence in split_sentences(text):
        tokens = tokenizer(sentence)
        if len(tokens) >= min_tokens:
            out.append(tokens[:max_tokens])
    return out


def _tokenize_job(args: tuple[str, dict, int, int]) -> list[list[str]]:
    path, tok, lo, hi = args
    return tokenize_document(Path(path), Tokenizer(**tok), lo, hi)


def tokenize_documents(paths: list[Path], settings: CorpusSettings, workers: int = 0) -> list[list[list[str]]]:
    """Tokenise documents, in parallel processes when ``workers > 1``; order is kept."""
    tok = {"kind": settings.tokenizer, "lowercase": settings.lowercase}
    jobs = [(str(p), tok, settings.min_tokens, settings.max_tokens) for p in paths]
    return list(ordered_map(_tokenize_job, jobs, workers))


def file_fingerprint(paths: Iterable[Path]) -> list[list]:
    """[path, size, mtime] of each file: what a cache key must change with."""
    return [[str(p), p.stat().st_size, int(p.stat().st_mtime)] for p in paths]


def cache_key(train_files: list[Path], valid_files: list[Path], settings: CorpusSettings) -> str:
    blob = json.dumps(
        {"v": CACHE_VERSION, "train": file_fingerprint(train_files), "valid": file_fingerprint(valid_files),
         "settings": settings.tokenization()},
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _save(path: Path, words: list[str], counts: np.ndarray, splits: dict[str, TokenizedCorpus]) -> None:
    arrays = {"words": np.array(words, dtype=object), "counts": counts}
    for name, corpus in splits.items():
        arrays[f"{name}_ids"] = corpus.ids
        arrays[f"{name}_offsets"] = corpus.offsets
        arrays[f"{name}_doc_ids"] = corpus.doc_ids
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}.npz")
    with open(tmp, "wb") as f:
        np.savez(f, **arrays)
    os.replace(tmp, path)


def _load(path: Path, names: Iterable[str]) -> tuple[list[str], np.ndarray, dict[str, TokenizedCorpus]]:
    with np.load(path, allow_pickle=True) as z:
        words, counts = list(z["words"]), z["counts"]
        splits = {n: TokenizedCorpus(z[f"{n}_ids"], z[f"{n}_offsets"], z[f"{n}_doc_ids"]) for n in names}
    return words, counts, splits


def _tokenize_all(train_files: list[Path], valid_files: list[Path], settings: CorpusSettings,
                  workers: int) -> tuple[list[str], np.ndarray, dict[str, TokenizedCorpus]]:
    """Every word type of the training documents (most frequent first, ids from 1; 0 is "not a
    training word"), their counts, and both splits as ids over that full list."""
    train_tokens = tokenize_documents(train_files, settings, workers)
    valid_tokens = tokenize_documents(valid_files, settings, workers)
    counter: Counter = Counter()
    for doc in train_tokens:
        for sentence in doc:
            counter.update(sentence)
    words = sorted(counter, key=lambda w: (-counter[w], w))
    index = {w: i + 1 for i, w in enumerate(words)}
    counts = np.array([0] + [counter[w] for w in words], dtype=np.int64)
    splits = {name: TokenizedCorpus.from_sentences([[[index.get(t, 0) for t in s] for s in d] for d in docs])
              for name, docs in (("train", train_tokens), ("valid", valid_tokens))}
    return ["<not-in-train>"] + words, counts, splits


def choose_vocab(words: list[str], counts: np.ndarray, settings: CorpusSettings) -> Vocab:
    """The model's vocabulary from the training word types (``words[i]`` seen ``counts[i]`` times)."""
    corpus_counts = Counter({w: int(c) for w, c in zip(words[1:], counts[1:]) if w not in SPECIALS})
    if settings.vocab_source == "corpus":
        return Vocab.build(corpus_counts, max_size=settings.vocab_size, min_count=settings.min_count)
    glove = [w for w in glove_words() if w not in SPECIALS]
    if settings.vocab_source == "glove":
        return Vocab(list(SPECIALS) + glove)
    head = Vocab.build(corpus_counts, max_size=settings.vocab_size, min_count=settings.min_count)
    known = set(head.itos)
    return Vocab(head.itos + [w for w in glove if w not in known])


def remap(corpus: TokenizedCorpus, mapping: np.ndarray) -> TokenizedCorpus:
    """The same sentences with every id ``i`` replaced by ``mapping[i]``."""
    return TokenizedCorpus(mapping[corpus.ids].astype(np.int32), corpus.offsets, corpus.doc_ids)


def load_corpus(train_dir: str | Path, valid_dir: str | Path, settings: CorpusSettings, cache_dir: str | Path,
                workers: int = 0) -> tuple[Vocab, dict[str, TokenizedCorpus], bool]:
    """Return (vocabulary chosen from train, {"train", "valid"} corpora over it, whether the cache was hit)."""
    train_files, valid_files = list_documents(train_dir), list_documents(valid_dir)
    path = Path(cache_dir) / f"corpus-{cache_key(train_files, valid_files, settings)}.npz"
    hit = path.exists()
    if hit:
        words, counts, splits = _load(path, ("train", "valid"))
        log.info("Loaded tokenised corpus from %s", path)
    else:
        log.info("Processing %d train and %d valid documents (cached afterwards in %s)",
                 len(train_files), len(valid_files), path)
        words, counts, splits = _tokenize_all(train_files, valid_files, settings, workers)
        _save(path, words, counts, splits)
    vocab = choose_vocab(words, counts, settings)
    mapping = np.array([UNK_ID] + [vocab.stoi.get(w, UNK_ID) for w in words[1:]], dtype=np.int32)
    return vocab, {name: remap(corpus, mapping) for name, corpus in splits.items()}, hit
