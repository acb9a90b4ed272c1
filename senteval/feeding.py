"""How SentEval hands a task's text to a client: ``prepare(params, samples)`` once, then ``batcher(params, batch)``
over batches of token lists in SentEval's order.

The engine's loaders already hold every split in SentEval's sorted order (by length, then label; pairs by the
length of A, of B, then label), so SentEval's batches are slices of those splits. The order of the calls is
each task module's (``senteval/*.py`` at 5d6dc11):

* one sentence per example (MR..MPQA, SST, TREC, probing): each split in turn, in batches;
* pairs, side by side (MRPC, SICK-E, SICK-R, STS-B): per split, every batch of A, then every batch of B;
* pairs, interleaved (STS12-16, SNLI): per split (STS: per sub-dataset), a batch of A, then the same rows of B.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from sentence_lab.evaluation.encoders.text_encoders import check_output
from sentence_lab.tasks.base import TaskData

__all__ = ["INTERLEAVED", "samples", "batches", "encode_with_batcher", "lookup"]

INTERLEAVED = frozenset({"STS12", "STS13", "STS14", "STS15", "STS16", "SNLI"})

Batcher = Callable[[object, list[list[str]]], object]


def samples(data: TaskData) -> list[list[str]]:
    """What ``do_prepare`` gives ``prepare``: every split's sentences as token lists, A then B, splits in
    SentEval's order (within a split, sorted as SentEval sorts them before encoding)."""
    return [s.split() for split in data.splits.values() for s in split.a + (split.b or [])]


def batches(task: str, data: TaskData, batch_size: int) -> Iterator[list[str]]:
    """The sentences of each ``batcher`` call, in SentEval's order."""
    for split in data.splits.values():
        starts = range(0, len(split), batch_size)
        if split.b is None:
            for i in starts:
                yield split.a[i:i + batch_size]
        elif task in INTERLEAVED:
            for i in starts:
                yield split.a[i:i + batch_size]
                yield split.b[i:i + batch_size]
        else:
            for side in (split.a, split.b):
                for i in starts:
                    yield side[i:i + batch_size]


def encode_with_batcher(task: str, data: TaskData, params, batcher: Batcher) -> dict[str, np.ndarray]:
    """Call ``batcher(params, [tokens, ...])`` on SentEval's batches; sentence -> its vector (the first one
    returned, should a sentence come back in several batches)."""
    table: dict[str, np.ndarray] = {}
    dim = None
    for batch in batches(task, data, int(params.batch_size)):
        out = check_output(batcher(params, [s.split() for s in batch]), batch, dim, name="batcher")
        dim = out.shape[1]
        for sentence, vector in zip(batch, out):
            table.setdefault(sentence, vector)
    return table


def lookup(table: dict[str, np.ndarray]) -> Callable[[list[str]], np.ndarray]:
    """The engine's ``embed``: rows of the table for a list of sentences."""
    def embed(sentences: list[str]) -> np.ndarray:
        return np.stack([table[s] for s in sentences])

    return embed
