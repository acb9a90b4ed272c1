"""Plain-text documents -> sentences -> token ids, in document order, cached on disk."""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from datamodules.text import Tokenizer, Vocab

log = logging.getLogger(__name__)

CACHE_VERSION = 1
_BLANK_LINES = re.compile(r"\n\s*\n")


@dataclass(frozen=True)
class CorpusSettings:
    """Everything that changes the processed corpus; part of the cache key."""

    tokenizer: str = "moses"
    lowercase: bool = True
    min_tokens: int = 1
    max_tokens: int = 50
    vocab_size: int = 20000
    min_count: int = 1

    def __post_init__(self) -> None:
        if self.min_tokens < 1 or self.max_tokens < self.min_tokens:
            raise ValueError(f"min_tokens={self.min_tokens}, max_tokens={self.max_tokens}: "
                             "need 1 <= data.min_tokens <= data.max_tokens")


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


def list_documents(folder: str | Path) -> list[Path]:
    """Every ``*.txt`` below ``folder``, in sorted path order (the corpus order)."""
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(
            f"corpus folder {root} does not exist: set paths.data_dir (env SENTENCE_DATA) or data.train_dir"
        )
    files = sorted(p for p in root.rglob("*.txt") if p.is_file())
    if not files:
        raise FileNotFoundError(f"no .txt documents under {root}: point data.train_dir at a folder of plain-text books")
    return files


def split_sentences(text: str) -> list[str]:
    """Paragraphs are separated by blank lines; wrapped lines are joined; sentences by blingfire."""
    from blingfire import text_to_sentences

    sentences: list[str] = []
    for paragraph in _BLANK_LINES.split(text):
        paragraph = " ".join(paragraph.split())
        if paragraph:
            sentences.extend(s for s in text_to_sentences(paragraph).split("\n") if s.strip())
    return sentences


def tokenize_document(path: Path, tokenizer: Tokenizer, min_tokens: int, max_tokens: int) -> list[list[str]]:
    text = path.read_text(encoding="utf-8", errors="replace")
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
    if workers > 1 and len(paths) > 1:
        from multiprocessing import get_context

        with get_context("spawn").Pool(workers) as pool:
            return pool.map(_tokenize_job, jobs, chunksize=1)
    return [_tokenize_job(j) for j in jobs]


def _fingerprint(paths: Iterable[Path]) -> list[list]:
    return [[str(p), p.stat().st_size, int(p.stat().st_mtime)] for p in paths]


def cache_key(train_files: list[Path], valid_files: list[Path], settings: CorpusSettings) -> str:
    blob = json.dumps(
        {"v": CACHE_VERSION, "train": _fingerprint(train_files), "valid": _fingerprint(valid_files),
         "settings": asdict(settings)},
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _save(path: Path, vocab: Vocab, splits: dict[str, TokenizedCorpus]) -> None:
    arrays = {}
    for name, corpus in splits.items():
        arrays[f"{name}_ids"] = corpus.ids
        arrays[f"{name}_offsets"] = corpus.offsets
        arrays[f"{name}_doc_ids"] = corpus.doc_ids
    arrays["vocab"] = np.array(vocab.itos, dtype=object)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}.npz")
    with open(tmp, "wb") as f:
        np.savez(f, **arrays)
    os.replace(tmp, path)


def _load(path: Path, names: Iterable[str]) -> tuple[Vocab, dict[str, TokenizedCorpus]]:
    with np.load(path, allow_pickle=True) as z:
        vocab = Vocab(list(z["vocab"]))
        splits = {n: TokenizedCorpus(z[f"{n}_ids"], z[f"{n}_offsets"], z[f"{n}_doc_ids"]) for n in names}
    return vocab, splits


def load_corpus(train_dir: str | Path, valid_dir: str | Path, settings: CorpusSettings, cache_dir: str | Path,
                workers: int = 0) -> tuple[Vocab, dict[str, TokenizedCorpus], bool]:
    """Return (vocab built on train, {"train", "valid"} corpora, whether the cache was hit)."""
    train_files, valid_files = list_documents(train_dir), list_documents(valid_dir)
    path = Path(cache_dir) / f"corpus-{cache_key(train_files, valid_files, settings)}.npz"
    if path.exists():
        vocab, splits = _load(path, ("train", "valid"))
        log.info("Loaded processed corpus from %s", path)
        return vocab, splits, True
    log.info("Processing %d train and %d valid documents (cached afterwards in %s)",
             len(train_files), len(valid_files), path)
    train_tokens = tokenize_documents(train_files, settings, workers)
    valid_tokens = tokenize_documents(valid_files, settings, workers)
    counts: Counter = Counter()
    for doc in train_tokens:
        for sentence in doc:
            counts.update(sentence)
    vocab = Vocab.build(counts, max_size=settings.vocab_size, min_count=settings.min_count)
    splits = {
        "train": TokenizedCorpus.from_sentences([[vocab.encode(s) for s in d] for d in train_tokens]),
        "valid": TokenizedCorpus.from_sentences([[vocab.encode(s) for s in d] for d in valid_tokens]),
    }
    _save(path, vocab, splits)
    return vocab, splits, False
