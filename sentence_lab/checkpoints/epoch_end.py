"""A checkpoint saved during an epoch's end (``last.ckpt`` before the per-epoch suite, ``interrupted.ckpt`` at a stop in
it) resumes at the next epoch's start, counted in epochs or in steps alike.

Lightning saves such a checkpoint with the epoch counted as processed but not completed, and resumes it in two ways:
counted in epochs, as finished (the next epoch starts); counted in steps (``max_steps``), by running the epoch's end
again on a batch count it never resets, so the next epoch trains no batch at all (seen with Lightning 2.6: the run
ends "complete" after half its steps). ``as_after_epoch_end`` rewrites the loop state of such a checkpoint, as it is
loaded, into the state Lightning itself has once the epoch's end is over (the epoch completed, this epoch's batch and
validation counts reset), so both ways start the next epoch. What the cut end did not do is done by its owners on
resume: the suite's scores (``training.eval_suite``), the epoch's training means (``training.module``)."""
from __future__ import annotations

from typing import Any

FIT_LOOP = ("loops", "fit_loop")


def _fit_loop(checkpoint: dict[str, Any]) -> dict[str, Any] | None:
    loops = checkpoint.get(FIT_LOOP[0])
    fit = loops.get(FIT_LOOP[1]) if isinstance(loops, dict) else None
    return fit if isinstance(fit, dict) else None


def cut_epoch_end(checkpoint: dict[str, Any]) -> int | None:
    """The epoch (counted from 1) whose end was under way when ``checkpoint`` was saved, or None: a checkpoint saved
    during training, validation, or after the end of its epoch."""
    fit = _fit_loop(checkpoint)
    progress = (fit or {}).get("epoch_progress", {}).get("total", {})
    processed, completed = progress.get("processed"), progress.get("completed")
    if isinstance(processed, int) and isinstance(completed, int) and processed == completed + 1:
        return processed
    return None


def _zero(counts: dict[str, Any]) -> None:
    for key in counts:
        counts[key] = 0


def as_after_epoch_end(checkpoint: dict[str, Any], counted_in_steps: bool) -> int | None:
    """Rewrite, in place, the loop state of a checkpoint saved during an epoch's end into the state after that end:
    the epoch completed; the batch, optimiser-step, scheduler and validation counts of the epoch reset, as Lightning
    resets them when an epoch starts (``reset_on_run``); the totals across epochs kept. ``counted_in_steps``: the
    resumed run's training is counted in steps (``trainer.max_steps``), which Lightning always resumes as a restart:
    its first pass through the epoch loop then skips a validation check and counts a batch it never trains (the
    logged step), so the count is saved one lower. Returns the epoch (counted from 1), or None when the checkpoint
    was not saved during an epoch's end (left as it is)."""
    epoch = cut_epoch_end(checkpoint)
    fit = _fit_loop(checkpoint)
    if epoch is None or fit is None:
        return None
    for counts in fit["epoch_progress"].values():
        counts["completed"] = counts["processed"]
    batches = fit.get("epoch_loop.batch_progress", {})
    _zero(batches.get("current", {}))
    batches["is_last_batch"] = False
    _zero(fit.get("epoch_loop.scheduler_progress", {}).get("current", {}))
    for progress in fit.get("epoch_loop.automatic_optimization.optim_progress", {}).get("optimizer", {}).values():
        _zero(progress.get("current", {}))
    _zero(fit.get("epoch_loop.manual_optimization.optim_step_progress", {}).get("current", {}))
    validation = fit.get("epoch_loop.val_loop.batch_progress", {})
    for side in ("total", "current"):  # the validation count is per epoch (Lightning resets its total too)
        _zero(validation.get(side, {}))
    validation["is_last_batch"] = False
    if counted_in_steps:
        state = fit.setdefault("epoch_loop.state_dict", {})
        state["_batches_that_stepped"] = int(state.get("_batches_that_stepped", 0)) - 1
    return epoch
