"""The length-bucket plan: every row in exactly one bucket, buckets in ascending length, each bucket's longest its
real longest, ``restore`` the inverse of the plan's order; no plan where buckets would not save the work."""
from __future__ import annotations

import torch

from sentence_lab.encoders.buckets import plan_buckets


def test_buckets_cover_every_row_once_in_ascending_length_and_restore_batch_order():
    lengths = torch.tensor([5, 1, 30, 2, 2, 7, 1, 3, 9, 4, 6, 1])
    plan = plan_buckets(lengths, max_len=30, bucket_rows=4)
    assert plan is not None and len(plan.groups) == 3
    rows = torch.cat([r for r, _ in plan.groups])
    assert sorted(rows.tolist()) == list(range(12))
    for r, longest in plan.groups:
        assert longest == int(lengths[r].max())
    assert lengths[rows].tolist() == sorted(lengths.tolist())
    parts = [lengths[r][:, None] * 10 for r, _ in plan.groups]  # a per-row result computed bucket by bucket
    assert plan.restore(parts)[:, 0].tolist() == (lengths * 10).tolist()


def test_no_buckets_when_they_would_not_save_or_the_batch_is_one_bucket():
    assert plan_buckets(torch.tensor([3, 1, 2]), max_len=3, bucket_rows=4) is None
    assert plan_buckets(torch.tensor([9, 1, 2, 5]), max_len=9, bucket_rows=None) is None
    alike = torch.tensor([10, 10, 9, 10, 10, 9, 10, 10])  # length-sorted evaluation batches: nothing to cut
    assert plan_buckets(alike, max_len=10, bucket_rows=2) is None
