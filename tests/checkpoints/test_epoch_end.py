"""A checkpoint saved during an epoch's end is rewritten, as it loads, into the loop state after that end
(sentence_lab.checkpoints.epoch_end); the end-to-end behaviour is tests/runs/test_stop_in_suite.py's."""
from __future__ import annotations

import copy

from sentence_lab.checkpoints.epoch_end import as_after_epoch_end, cut_epoch_end


def _counts(n: int, *, completed: int | None = None) -> dict[str, int]:
    return {"ready": n, "started": n, "processed": n, "completed": n if completed is None else completed}


def saved_in_epoch_end(epochs: int = 1, batches: int = 15) -> dict:
    """The fit loop's state Lightning 2.6 saves in ``on_train_epoch_end`` after ``epochs`` epochs of ``batches``
    (read off a real run's interrupted.ckpt): the epoch processed, not completed."""
    steps = epochs * batches
    return {"global_step": steps, "loops": {"fit_loop": {
        "state_dict": {},
        "epoch_loop.state_dict": {"_batches_that_stepped": steps},
        "epoch_loop.batch_progress": {"total": _counts(steps), "current": _counts(batches), "is_last_batch": True},
        "epoch_loop.scheduler_progress": {"total": {"ready": 0, "completed": 0},
                                          "current": {"ready": 0, "completed": 0}},
        "epoch_loop.automatic_optimization.optim_progress": {"optimizer": {
            "step": {"total": {"ready": steps, "completed": steps},
                     "current": {"ready": batches, "completed": batches}},
            "zero_grad": {"total": {"ready": steps, "completed": steps, "started": steps},
                          "current": {"ready": batches, "completed": batches, "started": batches}}}},
        "epoch_loop.manual_optimization.optim_step_progress": {"total": {"ready": 0, "completed": 0},
                                                               "current": {"ready": 0, "completed": 0}},
        "epoch_loop.val_loop.batch_progress": {"total": _counts(3), "current": _counts(3), "is_last_batch": True},
        "epoch_progress": {"total": _counts(epochs, completed=epochs - 1),
                           "current": _counts(epochs, completed=epochs - 1)},
    }}}


def test_a_save_during_an_epochs_end_becomes_the_state_after_it():
    checkpoint = saved_in_epoch_end(epochs=2)
    assert cut_epoch_end(checkpoint) == 2
    assert as_after_epoch_end(checkpoint, counted_in_steps=False) == 2
    fit = checkpoint["loops"]["fit_loop"]
    assert fit["epoch_progress"]["total"] == _counts(2) and fit["epoch_progress"]["current"] == _counts(2)
    assert fit["epoch_loop.batch_progress"]["total"] == _counts(30)  # the totals across epochs kept
    assert fit["epoch_loop.batch_progress"]["current"] == _counts(0)
    assert fit["epoch_loop.batch_progress"]["is_last_batch"] is False
    step = fit["epoch_loop.automatic_optimization.optim_progress"]["optimizer"]["step"]
    assert step["total"] == {"ready": 30, "completed": 30} and step["current"] == {"ready": 0, "completed": 0}
    assert fit["epoch_loop.val_loop.batch_progress"]["total"] == _counts(0)
    assert fit["epoch_loop.state_dict"]["_batches_that_stepped"] == 30
    assert cut_epoch_end(checkpoint) is None  # done once: the state is after the end now


def test_training_counted_in_steps_saves_the_logged_step_one_lower():
    checkpoint = saved_in_epoch_end()
    as_after_epoch_end(checkpoint, counted_in_steps=True)
    assert checkpoint["loops"]["fit_loop"]["epoch_loop.state_dict"]["_batches_that_stepped"] == 14


def test_a_checkpoint_saved_elsewhere_is_left_as_it_is():
    mid_epoch = saved_in_epoch_end()
    progress = mid_epoch["loops"]["fit_loop"]["epoch_progress"]
    for side in progress.values():  # in training: the epoch started, not processed
        side["processed"] = side["completed"] = 0
    after_end = saved_in_epoch_end()
    for side in after_end["loops"]["fit_loop"]["epoch_progress"].values():
        side["completed"] = side["processed"]
    for checkpoint in (mid_epoch, after_end, {"state_dict": {}}):
        before = copy.deepcopy(checkpoint)
        assert cut_epoch_end(checkpoint) is None
        assert as_after_epoch_end(checkpoint, counted_in_steps=True) is None and checkpoint == before
