"""SentEval's numpy streams for every group of a stage at once: the 5% validation split, then one permutation per
epoch, one ``RandomState(seed)`` per (training-set size, split); per step the rows of every live group, their loss
weights and which groups step (:class:`BatchPlan`)."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch


@dataclass
class Group:
    """A training set and its dev set, shared by ``L`` members (one per L2 value).

    ``train_idx`` indexes rows of ``X``; ``dev_idx`` rows of ``Xdev`` (of ``X`` when there is no ``Xdev``);
    ``None`` is SentEval's ``validation_split``: a random ``int(split * n)`` of the training rows is held out.
    """

    train_idx: np.ndarray
    dev_idx: np.ndarray | None = None
    validation_split: float = 0.05


@dataclass
class _Stream:
    """SentEval's numpy draws for one (training-set size, split): the held-out split, then a permutation per epoch."""

    rs: np.random.RandomState
    kept: np.ndarray | None = None  # positions trained on, after a validation split
    held: np.ndarray | None = None  # positions held out for early stopping
    epoch: int = -1
    perm: np.ndarray | None = None


class Step(NamedTuple):
    """One minibatch step of the live groups: ``rows [Ga, B]`` (the first ``counts[g]`` are group ``g``'s, then
    padding), each row's loss weight ``[Ga, 1, 1, B]`` (``scale / count``, 0 on padding) and which groups step
    (bool ``[Ga]``, or None when all do: a group whose epoch is over does not)."""

    rows: torch.Tensor
    counts: np.ndarray
    weight: torch.Tensor
    active: np.ndarray | None


class EpochSteps(NamedTuple):
    """An epoch's steps at once: rows ``[S, Ga, B]``, rows per group ``[S, Ga]``, loss weights
    ``[S, Ga, 1, 1, B]`` and which groups step ``[S, Ga]`` (bool)."""

    rows: torch.Tensor
    counts: np.ndarray
    weight: torch.Tensor
    active: np.ndarray

    def each(self) -> Iterator[Step]:
        """The steps one by one (``active`` None where every group steps)."""
        full = np.all(self.active, axis=1)
        for s in range(len(self.rows)):
            yield Step(self.rows[s], self.counts[s], self.weight[s], None if full[s] else self.active[s])


class BatchPlan:
    """Training and dev rows of each group, and per step the rows, loss weights and stepping groups."""

    def __init__(self, groups: Sequence[Group], seed: int, batch_size: int, device: torch.device,
                 dtype: torch.dtype = torch.float32, scale: float = 1.0):
        self.batch_size, self.device, self.dtype, self.scale = batch_size, device, dtype, scale
        streams: dict[tuple, _Stream] = {}
        self.train, self.dev, self.stream = [], [], []
        for group in groups:
            rows = np.asarray(group.train_idx, dtype=np.int64)
            split = None if group.dev_idx is not None else float(group.validation_split)
            if (len(rows), split) not in streams:
                st = streams[len(rows), split] = _Stream(np.random.RandomState(seed))
                if split is not None:
                    perm, cut = st.rs.permutation(len(rows)), int(split * len(rows))
                    st.kept, st.held = perm[cut:], perm[:cut]
            st = streams[len(rows), split]
            self.train.append(rows if split is None else rows[st.kept])
            self.dev.append(np.asarray(group.dev_idx, dtype=np.int64) if split is None else rows[st.held])
            self.stream.append(st)
        self.ndev = np.array([len(d) for d in self.dev], dtype=np.int64)

    def _perm(self, g: int, epoch: int) -> np.ndarray:
        st = self.stream[g]  # groups sharing a stream are in lockstep: epochs come in increasing order
        while st.epoch < epoch:
            st.perm, st.epoch = st.rs.permutation(len(self.train[g])), st.epoch + 1
        assert st.perm is not None, "epochs are counted from 0"
        return st.perm

    def steps(self, epoch: int, live: np.ndarray) -> Iterator[Step]:
        """The minibatch steps of ``epoch`` for the groups ``live``, in SentEval's order."""
        return self.epoch(epoch, live).each()

    def epoch(self, epoch: int, live: np.ndarray) -> EpochSteps:
        """All steps of ``epoch`` for the groups ``live`` at once (what :meth:`steps` yields one by one)."""
        B = self.batch_size
        rows = [self.train[g][self._perm(g, epoch)] for g in live]
        S = -(-max(len(r) for r in rows) // B)
        idx = np.zeros((len(live), S * B), dtype=np.int64)
        count = np.zeros((len(live), S), dtype=np.int64)
        for i, r in enumerate(rows):
            idx[i, : len(r)] = r
            count[i] = np.clip(len(r) - B * np.arange(S), 0, B)
        weight = (np.arange(B)[None, None, :] < count[:, :, None]) * (self.scale / np.maximum(count, 1)[:, :, None])
        idx_t = torch.as_tensor(idx.reshape(len(live), S, B).transpose(1, 0, 2).copy(), device=self.device)
        weight_t = torch.as_tensor(weight.transpose(1, 0, 2)[:, :, None, None].copy(), device=self.device,
                                   dtype=self.dtype)
        count = np.ascontiguousarray(count.T)
        return EpochSteps(idx_t, count, weight_t, count > 0)
