"""A corpus for training: its files prepared once (``sentence_lab.text.corpus_prep``) into a cached folder of
memory-mapped
arrays, shared by every process and rank, and a vocabulary chosen from its word counts."""
from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import shutil
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
from filelock import FileLock

from sentence_lab.text import SPECIALS, UNK_ID, Tokenizer, Vocab
from sentence_lab.text.corpus_formats import check_format, list_corpus_files
from sentence_lab.text.corpus_prep import PreparedCorpusBroken, TokenRules, open_prepared, open_split, prepare_corpus
from sentence_lab.text.glove import glove_words
from sentence_lab.text.subword import tokenizer_vocab

log = logging.getLogger(__name__)

CACHE_VERSION = 3
MAX_PREPROCESS_WORKERS = 16  # default_workers(): tokenising processes on a cache miss, at most
# workers_for(): a worker is a new interpreter importing the tokenizer (2-3 s of a core) that then reads its files;
# below two megabytes a worker costs more than it saves (the shipped books' 3.2 MB on two cores: 14.5 s in one
# process, 12.8 s with two workers holding 2.3 times the memory; benchmarks/corpus_prep.py)
BYTES_PER_WORKER = 2 << 20
VOCAB_SOURCES = ("corpus", "glove", "corpus+glove")
SPLITS = ("train", "valid")


class CorpusPreparationFailed(OSError):
    """Preparing the corpus stopped (a full disk); nothing it wrote is left for a later run to trust."""


@dataclass(frozen=True)
class CorpusSettings:
    """Everything that changes the prepared corpus (the cache key) and the vocabulary drawn from it.

    The cache holds ids over *every* word type of the training files; ``vocab_source``,
    ``vocab_size`` and ``min_count`` pick the model's vocabulary afterwards by a cheap re-mapping:
    ``corpus`` (the most frequent training words), ``glove`` (GloVe 6B's 400k words: no training
    word it knows is lost) or ``corpus+glove`` (the corpus vocabulary, then the other GloVe words).
    ``corpus_format`` says how the files are read (``sentence_lab.text.corpus_formats``), ``text_field`` which field or
    column
    holds the text in ``jsonl`` and ``parquet`` files.
    """

    tokenizer: str = "treebank"
    lowercase: bool = True
    min_tokens: int = 1
    max_tokens: int = 50
    vocab_size: int = 20000
    min_count: int = 1
    vocab_source: str = "corpus"
    corpus_format: str = "documents"
    text_field: str = "text"
    tokenizer_model: str = ""  # tokenizer=huggingface: the model folder whose tokenizer.json reads the text

    def __post_init__(self) -> None:
        if self.min_tokens < 1 or self.max_tokens < self.min_tokens:
            raise ValueError(f"min_tokens={self.min_tokens}, max_tokens={self.max_tokens}: "
                             "need 1 <= data.min_tokens <= data.max_tokens")
        if self.vocab_source not in VOCAB_SOURCES:
            raise ValueError(f"unknown data.vocab_source {self.vocab_source!r}: use one of {VOCAB_SOURCES}")
        check_format(self.corpus_format)

    def token_rules(self) -> TokenRules:
        """The settings that change the prepared token ids (the vocabulary is chosen afterwards)."""
        tokenizer = self.text_tokenizer()
        return TokenRules(self.tokenizer, self.lowercase, self.min_tokens, self.max_tokens, self.corpus_format,
                          self.text_field, model=tokenizer.model, fingerprint=tokenizer.fingerprint)

    def text_tokenizer(self) -> Tokenizer:
        """The tokenizer these settings name (a model's own, fingerprinted, for ``tokenizer=huggingface``)."""
        return Tokenizer(self.tokenizer, self.lowercase, model=self.tokenizer_model)


@dataclass
class TokenizedCorpus:
    """Sentences as one flat array of word ids with offsets; ``doc_ids`` gives each sentence's document.

    The arrays may be memory-mapped (a prepared corpus: every DataLoader worker and rank shares its pages);
    ``vocab_map``, when set, turns the stored ids into vocabulary ids as each span is read, so no process holds a
    re-mapped copy of the corpus.
    """

    word_ids: np.ndarray  # int32 [total tokens]
    offsets: np.ndarray  # int64 [n_sentences + 1]
    doc_ids: np.ndarray  # int32 [n_sentences]
    vocab_map: np.ndarray | None = None  # int32 [stored word types]
    source: tuple[str, str] | None = None  # (prepared folder, split) the arrays are mapped from

    def __getstate__(self) -> dict:
        """A memory-mapped corpus pickles as where it lives (for spawned DataLoader workers and ranks), not as
        a copy of its arrays."""
        if self.source is None:
            return dict(self.__dict__)
        return {"source": self.source, "sentences": len(self), "vocab_map": self.vocab_map}

    def __setstate__(self, state: dict) -> None:
        if "word_ids" in state:
            self.__dict__.update(state)
            return
        folder, split = state["source"]
        arrays, n = open_split(Path(folder), split), state["sentences"]
        self.__dict__.update(word_ids=arrays.ids[: arrays.offsets[n]], offsets=arrays.offsets[: n + 1],
                             doc_ids=arrays.doc_ids[:n],
                             vocab_map=state["vocab_map"], source=state["source"])

    def __len__(self) -> int:
        return len(self.doc_ids)

    def span(self, start: int, stop: int) -> np.ndarray:
        """The vocabulary ids of sentences ``[start, stop)``, concatenated."""
        ids = np.asarray(self.word_ids[self.offsets[start] : self.offsets[stop]])
        return self.vocab_map[ids] if self.vocab_map is not None else ids

    @property
    def ids(self) -> np.ndarray:
        """Every token's vocabulary id (a copy when re-mapped: for small corpora and tests)."""
        return self.span(0, len(self))

    def sentence(self, i: int) -> np.ndarray:
        return self.span(i, i + 1)

    def head(self, n: int) -> TokenizedCorpus:
        """The first ``n`` sentences (views, no copy)."""
        n = min(n, len(self))
        return TokenizedCorpus(self.word_ids[: self.offsets[n]], self.offsets[: n + 1], self.doc_ids[:n],
                               self.vocab_map, self.source)

    def token_counts(self, size: int, chunk: int = 1 << 24) -> np.ndarray:
        """How often each vocabulary id ``< size`` occurs, counted chunk by chunk over the stored ids."""
        stored = np.zeros(0, dtype=np.int64)
        for start in range(0, len(self.word_ids), chunk):
            part = np.bincount(np.asarray(self.word_ids[start : start + chunk]))
            if len(part) > len(stored):
                part[: len(stored)] += stored
                stored = part
            else:
                stored[: len(part)] += part
        if self.vocab_map is None:
            return np.pad(stored, (0, max(0, size - len(stored))))[:size].astype(np.int64)
        ids = self.vocab_map[: len(stored)]
        return np.bincount(ids, weights=stored, minlength=size)[:size].round().astype(np.int64)

    @property
    def n_documents(self) -> int:
        return int(self.doc_ids.max()) + 1 if len(self.doc_ids) else 0


def default_workers() -> int:
    """Tokenising processes on a cache miss unless told: one per core this process may use, at most
    ``MAX_PREPROCESS_WORKERS``."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(MAX_PREPROCESS_WORKERS, usable)


def workers_for(files: Iterable[Path]) -> int:
    """Tokenising processes for ``files`` when none are asked for (``data.preprocess_workers: null``): one per
    ``BYTES_PER_WORKER`` of them, at most one per file and ``default_workers()``; 0 (tokenise in this process) where
    that is under two, as for a corpus of a few pages, whose workers would take longer to start than to work."""
    files = list(files)
    workers = min(default_workers(), len(files), sum(p.stat().st_size for p in files) // BYTES_PER_WORKER)
    return workers if workers >= 2 else 0


def file_fingerprint(paths: Iterable[Path]) -> list[list]:
    """[path, size, mtime] of each file: what a cache key must change with."""
    return [[str(p), p.stat().st_size, int(p.stat().st_mtime)] for p in paths]


def rules_identity(rules: TokenRules) -> dict:
    """The token rules as the cache key holds them: a model tokenizer by its fingerprint, not its folder's path (the
    fields are left out for the word tokenizers, whose keys stay as they were)."""
    return {key: value for key, value in rules.__dict__.items()
            if key != "model" and not (key == "fingerprint" and not value)}


def cache_key(train_files: list[Path], valid_files: list[Path], settings: CorpusSettings) -> str:
    blob = json.dumps(
        {"v": CACHE_VERSION, "train": file_fingerprint(train_files), "valid": file_fingerprint(valid_files),
         "settings": rules_identity(settings.token_rules())},
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _prepare(folder: Path, files: dict[str, list[Path]], settings: CorpusSettings, workers: int) -> None:
    """Prepare into a temporary folder beside ``folder`` and rename it into place; a failure leaves neither."""
    for stale in folder.parent.glob(f"{folder.name}.tmp-*"):  # an interrupted preparation's; we hold the lock
        shutil.rmtree(stale, ignore_errors=True)
    tmp = folder.with_name(f"{folder.name}.tmp-{os.getpid()}")
    log.info("Preparing %d train and %d valid files into %s", len(files["train"]), len(files["valid"]), folder)
    try:
        manifest = prepare_corpus(files, settings.token_rules(), tmp, workers, key=folder.name)
        os.replace(tmp, folder)
    except OSError as err:
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            raise CorpusPreparationFailed(f"no space left on the disk of {folder.parent} while preparing the corpus: "
                                          "free space there or set data.cache_dir "
                                          "to a folder on a larger disk") from None
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("Prepared %s tokens at %s tokens/s", f"{manifest['splits']['train']['tokens']:,}",
             f"{manifest['tokens_per_second']:,}")


def open_or_prepare(folder: Path, files: dict[str, list[Path]], settings: CorpusSettings,
                    workers: int = 0) -> tuple[list[str], np.ndarray, dict, bool]:
    """Open the prepared corpus in ``folder``, preparing it first when it is missing. Processes that start together
    (DDP ranks, sweep jobs) take a file lock: one prepares, the others wait and open its result. A folder that does
    not load is named in a warning, set aside (``.broken-<time>``) and prepared again."""
    try:
        return (*open_prepared(folder, SPLITS), True)
    except PreparedCorpusBroken:
        pass
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{folder}.lock"):
        if folder.exists():
            try:
                return (*open_prepared(folder, SPLITS), True)
            except PreparedCorpusBroken as err:
                aside = folder.with_name(f"{folder.name}.broken-{datetime.now():%Y%m%d-%H%M%S}")
                os.replace(folder, aside)
                log.warning("the prepared corpus does not load (%s): set aside as %s and prepared again", err,
                            aside.name)
        _prepare(folder, files, settings, workers)
    return (*open_prepared(folder, SPLITS), False)


def choose_vocab(words: list[str], counts: np.ndarray, settings: CorpusSettings) -> Vocab:
    """The model's vocabulary from the training word types (``words[i]`` seen ``counts[i]`` times)."""
    if settings.tokenizer == "huggingface":  # a pre-trained model reads its own vocabulary, whatever the corpus holds
        return tokenizer_vocab(settings.tokenizer_model)
    corpus_counts = Counter({w: int(c) for w, c in zip(words[1:], counts[1:]) if w not in SPECIALS})
    if settings.vocab_source == "corpus":
        return Vocab.build(corpus_counts, max_size=settings.vocab_size, min_count=settings.min_count)
    glove = [w for w in glove_words() if w not in SPECIALS]
    if settings.vocab_source == "glove":
        return Vocab(list(SPECIALS) + glove)
    head = Vocab.build(corpus_counts, max_size=settings.vocab_size, min_count=settings.min_count)
    known = set(head.itos)
    return Vocab(head.itos + [w for w in glove if w not in known])


def load_corpus(train_dir: str | Path, valid_dir: str | Path, settings: CorpusSettings, cache_dir: str | Path,
                workers: int | None = 0) -> tuple[Vocab, dict[str, TokenizedCorpus], bool]:
    """Return (vocabulary chosen from train, {"train", "valid"} corpora over it, whether the cache was hit).
    ``workers``: tokenising processes on a cache miss (None: by the files' size, ``workers_for``)."""
    files = {"train": list_corpus_files(train_dir, settings.corpus_format),
             "valid": list_corpus_files(valid_dir, settings.corpus_format)}
    if workers is None:
        workers = workers_for(files["train"] + files["valid"])
    folder = Path(cache_dir) / f"corpus-{cache_key(files['train'], files['valid'], settings)}"
    words, counts, splits, hit = open_or_prepare(folder, files, settings, workers)
    if hit:
        log.info("Opened the prepared corpus %s", folder)
    vocab = choose_vocab(words, counts, settings)
    stoi = vocab.stoi
    mapping = np.fromiter((stoi.get(w, UNK_ID) for w in words), dtype=np.int32, count=len(words))
    return vocab, {name: TokenizedCorpus(s.ids, s.offsets, s.doc_ids, mapping, (str(folder), name))
                   for name, s in splits.items()}, hit
