"""Batches of consecutive sentences (Quick-Thoughts), shuffled by batch, reproducibly per epoch; or batches of short
runs of consecutive sentences drawn from anywhere in the corpus (skip-thought's triples)."""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import Dataset, Sampler

from sentence_lab.datamodules.corpus import TokenizedCorpus


class ContiguousChunks(Dataset):
    """Item ``k`` is the padded batch of sentences ``[k*B, (k+1)*B)`` with their document ids.

    A trailing chunk shorter than ``min_size`` is dropped (QT needs neighbours inside a batch).
    """

    def __init__(self, corpus: TokenizedCorpus, batch_size: int, min_size: int = 2) -> None:
        if batch_size < 2:
            raise ValueError(f"batch_size={batch_size}: contiguous batches need at least 2 sentences")
        self.corpus = corpus
        self.batch_size = batch_size
        n_full, rest = divmod(len(corpus), batch_size)
        self.n_chunks = n_full + (1 if rest >= min_size else 0)

    def __len__(self) -> int:
        return self.n_chunks

    def __getitem__(self, k: int) -> dict[str, torch.Tensor]:
        start = k * self.batch_size
        stop = min(start + self.batch_size, len(self.corpus))
        offsets = self.corpus.offsets
        lengths = np.diff(offsets[start : stop + 1])  # >= 1: the corpus keeps no empty sentence
        return padded_batch(lengths, self.corpus.span(start, stop), self.corpus.doc_ids[start:stop])


def padded_batch(lengths: np.ndarray, flat_ids: np.ndarray, doc_ids: np.ndarray) -> dict[str, torch.Tensor]:
    """The ``SENTENCES`` batch of sentences of ``lengths`` (>= 1) whose ids, one after another, are ``flat_ids``."""
    # One vectorised fill: row-major order of the mask is the order of the flat ids.
    grid = np.zeros((len(lengths), int(lengths.max())), dtype=np.int64)
    grid[np.arange(grid.shape[1])[None, :] < lengths[:, None]] = flat_ids
    return {"tokens": torch.from_numpy(grid), "lengths": torch.from_numpy(lengths.astype(np.int64)),
            "doc_ids": torch.from_numpy(doc_ids.astype(np.int64))}


class ScatteredRuns(Dataset):
    """Runs of ``run_length`` consecutive sentences (``[r*L, (r+1)*L)``), batched from anywhere in the corpus.

    Kiros et al.'s skip-thought training draws each batch's triples (a sentence, its previous and its next) from
    anywhere in the books (``training/homogeneous_data.py`` in their repository), so one step's gradient is not one
    book's; contiguous batches put one stretch of one book in every step. Item: a sequence of run indices (what
    ``EpochShuffledGroups`` yields) -> the padded batch of their sentences, run after run, whose ``doc_ids`` tell
    runs apart (two rows share an id only if they are in the same run and the same document), so an objective that
    looks for a sentence's neighbours among the rows beside it (skip-thought, Quick-Thoughts) finds them inside its
    run only. A trailing run shorter than ``min_size`` is dropped.
    """

    def __init__(self, corpus: TokenizedCorpus, run_length: int, min_size: int = 2) -> None:
        if run_length < 2:
            raise ValueError(f"data.run_length={run_length}: a run needs at least 2 consecutive sentences")
        self.corpus, self.run_length = corpus, run_length
        n_full, rest = divmod(len(corpus), run_length)
        self.n_runs = n_full + (1 if rest >= min_size else 0)

    def __len__(self) -> int:
        return self.n_runs

    def __getitem__(self, runs: Sequence[int]) -> dict[str, torch.Tensor]:
        offsets, n = self.corpus.offsets, len(self.corpus)
        spans = [(r * self.run_length, min((r + 1) * self.run_length, n)) for r in runs]
        lengths = np.concatenate([np.diff(offsets[a : b + 1]) for a, b in spans])
        flat = np.concatenate([self.corpus.span(a, b) for a, b in spans])
        docs = np.concatenate([self.corpus.doc_ids[a:b].astype(np.int64) * len(spans) + k
                               for k, (a, b) in enumerate(spans)])
        return padded_batch(lengths, flat, docs)


class EpochShuffledSampler(Sampler[int]):
    """A permutation of ``range(n)`` drawn from ``seed + epoch``; Lightning calls ``set_epoch``."""

    def __init__(self, n: int, seed: int, shuffle: bool = True) -> None:
        self.n, self.seed, self.shuffle, self.epoch = n, seed, shuffle, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        # A generator: the order is drawn at the first ``next``, after Lightning's ``set_epoch``
        # (on resume Lightning creates the iterator before it sets the epoch).
        if not self.shuffle:
            yield from range(self.n)
            return
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        yield from torch.randperm(self.n, generator=g).tolist()


class EpochShuffledGroups(Sampler[list]):
    """``EpochShuffledSampler``'s order of ``range(n)``, cut into lists of ``group`` (the last may be shorter)."""

    def __init__(self, n: int, group: int, seed: int, shuffle: bool = True) -> None:
        if group < 1:
            raise ValueError(f"group={group}: a batch needs at least one run")
        self.order, self.group = EpochShuffledSampler(n, seed, shuffle), group

    def set_epoch(self, epoch: int) -> None:
        self.order.set_epoch(epoch)

    def __len__(self) -> int:
        return -(-len(self.order) // self.group)

    def __iter__(self) -> Iterator[list]:
        order = list(self.order)
        for start in range(0, len(order), self.group):
            yield order[start : start + self.group]
