"""Resuming inside an epoch: the batches a rank already trained are skipped once, and an epoch a rank had finished
(its share of the epoch, under data parallelism) is never skipped whole."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from sentence_lab.datamodules.resumable import ResumableBatches


def _resumed(epoch: int, done: int, world_size: int = 1) -> ResumableBatches:
    data = ResumableBatches()
    data.trainer = SimpleNamespace(world_size=world_size)  # type: ignore[assignment]  # what skip_for_epoch reads
    data.load_state_dict({"epoch": epoch, "batches_done": done})
    return data


@pytest.mark.parametrize(("world_size", "done", "skipped"), [
    (1, 4, 4),    # mid-epoch: the rest of the epoch comes
    (1, 15, 0),   # the epoch was whole: the next one starts afresh
    (2, 4, 4),    # two ranks, each half-way through its 8 of the 15 batches
    (2, 8, 0),    # two ranks that had finished their 8: not 8 of 15 (that emptied the resumed epoch)
    (4, 3, 3), (4, 4, 0),
])
def test_a_rank_skips_what_it_trained_of_its_share(world_size, done, skipped):
    assert _resumed(2, done, world_size).skip_for_epoch(2, batches_per_epoch=15) == skipped


def test_another_epoch_or_a_second_call_skips_nothing():
    data = _resumed(2, 4)
    assert data.skip_for_epoch(3, 15) == 0
    assert data.skip_for_epoch(2, 15) == 0  # used once: the saved place is forgotten after the first loader
