"""Batches of consecutive sentences (Quick-Thoughts), shuffled by batch, reproducibly per epoch."""
from __future__ import annotations

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
        # One vectorised fill: row-major order of the mask is the order of the flat ids.
        grid = np.zeros((stop - start, int(lengths.max())), dtype=np.int64)
        grid[np.arange(grid.shape[1])[None, :] < lengths[:, None]] = self.corpus.span(start, stop)
        tokens, lengths_t = torch.from_numpy(grid), torch.from_numpy(lengths.astype(np.int64))
        doc_ids = torch.from_numpy(self.corpus.doc_ids[start:stop].astype(np.int64))
        return {"tokens": tokens, "lengths": lengths_t, "doc_ids": doc_ids}


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
