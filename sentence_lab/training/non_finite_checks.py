"""What non-finite steps end a run with, without Lightning: ``NonFiniteTraining`` and ``NonFiniteShare``
(``sentence_lab.training.non_finite`` skips and counts the steps). Weights holding NaN or inf are kept out of every
checkpoint by ``sentence_lab.checkpoints.non_finite_weights``."""
from __future__ import annotations


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
