"""What non-finite numbers raise, and the check on weights, without Lightning: the errors a run ends with
(``NonFiniteTraining``, ``NonFiniteShare``: ``sentence_lab.training.non_finite`` skips and counts the steps) and
``refuse_non_finite``, which keeps weights holding NaN or inf out of every checkpoint and export."""
from __future__ import annotations

from typing import Any

import torch


class NonFiniteTraining(RuntimeError):
    """More than ``max_in_a_row`` optimiser steps in a row had a non-finite loss or gradient."""

    def __init__(self, step: int, in_a_row: int, cause: str) -> None:
        self.step, self.in_a_row = step, in_a_row
        super().__init__(f"training stopped at step {step}: {in_a_row} steps in a row had a non-finite {cause} "
                         "(every one was skipped); the weights are those before the first of them "
                         "(checkpoints/interrupted.ckpt). Lower model.optimizer.lr, check the data, or use "
                         "trainer.precision=32-true; callbacks.non_finite_steps.max_in_a_row sets the limit")


class NonFiniteShare(RuntimeError):
    """A run finished its planned steps but skipped more than ``max_share`` of them: not the recipe's weights."""

    def __init__(self, skipped: int, steps: int, max_share: float) -> None:
        self.skipped, self.steps, self.max_share = skipped, steps, max_share
        super().__init__(f"training skipped {skipped} of its {steps} steps ({skipped / steps:.0%}) for a non-finite "
                         f"loss or gradient, more than callbacks.non_finite_steps.max_share={max_share:g}: the weights "
                         "are not those of the recipe (run_status.json says complete: false). Lower "
                         "model.optimizer.lr, check the data, or use trainer.precision=32-true")


class NonFiniteWeights(ValueError):
    """Weights holding NaN or inf: no checkpoint is written with them (nor exported)."""


def non_finite_tensors(state_dict: dict[str, Any]) -> list[str]:
    """The names of the floating-point tensors of ``state_dict`` that hold a NaN or an inf."""
    return [name for name, value in state_dict.items()
            if isinstance(value, torch.Tensor) and value.is_floating_point() and not bool(torch.isfinite(value).all())]


def refuse_non_finite(state_dict: dict[str, Any], what: str) -> None:
    """``NonFiniteWeights`` naming the first tensors that hold NaN or inf, if any."""
    bad = non_finite_tensors(state_dict)
    if bad:
        shown = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
        raise NonFiniteWeights(f"{what}: the weights hold NaN or inf ({shown}), so it was not written; the run's "
                               "earlier checkpoints are kept")
