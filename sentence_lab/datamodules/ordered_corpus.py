"""LightningDataModule over a folder of plain-text documents kept in order (Quick-Thoughts)."""
from __future__ import annotations

import logging

import numpy as np
from torch.utils.data import DataLoader

from sentence_lab.datamodules.contiguous import (
    ContiguousChunks,
    EpochShuffledGroups,
    EpochShuffledSampler,
    ScatteredRuns,
)
from sentence_lab.datamodules.corpus import CorpusSettings, TokenizedCorpus, load_corpus
from sentence_lab.datamodules.resumable import ResumableBatches, SkippingDataLoader
from sentence_lab.objectives.contract import SENTENCES
from sentence_lab.text import EOS_ID, Tokenizer, Vocab

log = logging.getLogger(__name__)


class OrderedCorpusDataModule(ResumableBatches):
    """Sentences of ``train_dir``/``valid_dir`` files as contiguous batches.

    The files (``corpus_format``: ``documents``, ``lines``, ``jsonl`` or ``parquet``;
    ``sentence_lab.text.corpus_formats``) are
    prepared once into ``cache_dir`` under a key made of the files and every setting, as memory-mapped arrays, so a
    later run starts in seconds whatever the corpus's size; the vocabulary is chosen from the training words.
    Yields ``SENTENCES`` batches over one vocabulary, ``source`` (see ``sentence_lab.objectives.contract``):
    ``batch_size``
    consecutive sentences, or with ``run_length`` set, ``batch_size // run_length`` runs of that many consecutive
    sentences from anywhere in the corpus (``ScatteredRuns``; 3: skip-thought's triples).
    """

    batch = SENTENCES

    def __init__(self, train_dir: str, valid_dir: str, cache_dir: str, batch_size: int = 400,
                 tokenizer: str = "treebank", lowercase: bool = True, min_tokens: int = 1,
                 max_tokens: int = 50, vocab_size: int = 20000, min_count: int = 1,
                 max_train_sentences: int | None = None, seed: int = 1234, num_workers: int = 0,
                 preprocess_workers: int | None = None, vocab_source: str = "corpus",
                 corpus_format: str = "documents", text_field: str = "text",
                 run_length: int | None = None, tokenizer_model: str = "") -> None:
        super().__init__()
        if run_length is not None and not 2 <= run_length <= batch_size:
            raise ValueError(f"data.run_length={run_length}: use 2 to data.batch_size ({batch_size}) consecutive "
                             "sentences a run, or null for batches of consecutive sentences")
        self.run_length = run_length
        self.train_dir, self.valid_dir, self.cache_dir = train_dir, valid_dir, cache_dir
        self.batch_size, self.seed, self.num_workers = batch_size, seed, num_workers
        self.max_train_sentences = max_train_sentences
        self.settings = CorpusSettings(tokenizer, lowercase, min_tokens, max_tokens, vocab_size, min_count,
                                       vocab_source, corpus_format, text_field, tokenizer_model)
        self.preprocess_workers = preprocess_workers  # None: by the corpus's size (corpus.workers_for)
        self.vocab: Vocab | None = None
        self.splits: dict[str, TokenizedCorpus] = {}

    @property
    def tokenizer(self) -> Tokenizer:
        return self.settings.text_tokenizer()

    @property
    def vocabs(self) -> dict[str, Vocab]:
        return {"source": self.vocab} if self.vocab is not None else {}

    @property
    def tokenizers(self) -> dict[str, Tokenizer]:
        return {"source": self.tokenizer}

    def setup(self, stage: str | None = None) -> None:
        if self.vocab is not None:
            return
        self.vocab, self.splits, hit = load_corpus(self.train_dir, self.valid_dir, self.settings,
                                                   self.cache_dir, self.preprocess_workers)
        if self.max_train_sentences:
            self.splits["train"] = self.splits["train"].head(self.max_train_sentences)
        log.info("Corpus%s: %d train sentences in %d documents, %d valid sentences, vocabulary %d",
                 " (cached)" if hit else "", len(self.splits["train"]), self.splits["train"].n_documents,
                 len(self.splits["valid"]), len(self.vocab))
        self.warn_if_small(len(self.splits["train"]), self.batch_size, "sentences", self.train_dir)

    def token_counts(self) -> dict[str, np.ndarray]:
        """How often each vocabulary id occurs in the training sentences, ``</s>`` once per sentence (what a
        decoder's ``output_bias: log_unigram`` starts from)."""
        if self.vocab is None:
            raise RuntimeError("token_counts() before setup(): setup builds the vocabulary")
        train = self.splits["train"]
        counts = train.token_counts(len(self.vocab))
        counts[EOS_ID] += len(train)
        return {"source": counts}

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        chunks: ContiguousChunks | ScatteredRuns
        sampler: EpochShuffledSampler | EpochShuffledGroups
        if self.run_length is None:
            chunks = ContiguousChunks(self.splits[split], self.batch_size)
            sampler = EpochShuffledSampler(len(chunks), self.seed, shuffle)
        else:
            chunks = ScatteredRuns(self.splits[split], self.run_length)
            sampler = EpochShuffledGroups(len(chunks), self.batch_size // self.run_length, self.seed, shuffle)
        if len(chunks) == 0:
            raise ValueError(f"the {split} corpus has fewer than 2 sentences: add documents to {self.train_dir}")
        skip = self.skip_for_epoch(self.trainer.current_epoch, len(sampler)) if shuffle and self.trainer else 0
        return SkippingDataLoader(chunks, batch_size=None, sampler=sampler, num_workers=self.num_workers,
                                  persistent_workers=self.num_workers > 0,
                                  skip_batches=skip)

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("valid", shuffle=False)

