"""Length buckets: a batch of right-padded sentences run in groups of alike length, each group trimmed to its own
longest sentence, so the cost follows the real tokens rather than ``batch x longest``. An encoder whose sentences do
not read each other (every encoder here: padding never changes a vector) gives each sentence what it gives alone;
the results go back to batch order. The transformer runs this plan; the recurrent encoders keep the same plan inline
in ``rnn.py``, the form torch.compile traces into one graph for every length (tests/training/test_compile.py)."""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

# Buckets run only when they cut the padded positions to at most this share of the whole batch's.
SAVING_NEEDED = 0.8


@dataclass(frozen=True)
class LengthBuckets:
    """``groups``: each bucket's rows of the batch (ascending length) and its longest length; ``order``: the rows in
    bucket order, so ``restore`` puts results computed bucket by bucket back in batch order."""

    order: torch.Tensor
    groups: list[tuple[torch.Tensor, int]]

    def restore(self, parts: list[torch.Tensor]) -> torch.Tensor:
        """The buckets' results (rows in bucket order, one tensor a bucket) joined, in batch order."""
        inverse = torch.empty_like(self.order)
        inverse[self.order] = torch.arange(self.order.numel(), device=self.order.device)
        return torch.cat(parts)[inverse.to(parts[0].device)]


def plan_buckets(lengths: torch.Tensor, max_len: int, bucket_rows: int | None,
                 saving_needed: float = SAVING_NEEDED) -> LengthBuckets | None:
    """The buckets of about ``bucket_rows`` sentences for a batch of ``lengths`` padded to ``max_len``, or ``None``
    where one run of the whole batch is as good: ``bucket_rows`` unset, a batch no larger than one bucket, or lengths
    so alike (e.g. evaluation's length-sorted batches) that the buckets would not cut the padded positions to
    ``saving_needed`` of the batch's."""
    if not bucket_rows or lengths.numel() <= bucket_rows:
        return None
    order = torch.argsort(lengths, stable=True)
    rows = order.tensor_split(-(-lengths.numel() // bucket_rows))
    sorted_lengths = lengths[order].tolist()  # one device sync; a bucket's longest sentence is its last
    longest = [max(1, sorted_lengths[end - 1]) for end in itertools.accumulate(len(r) for r in rows)]
    if sum(len(r) * n for r, n in zip(rows, longest)) > saving_needed * lengths.numel() * max_len:
        return None
    return LengthBuckets(order, list(zip(rows, longest)))
