"""Fault injection for the non-finite step drills: a loss made NaN or inf on chosen steps (and ranks), or a weight
made inf after a step, as a bf16 overflow or a too-high learning rate would."""
from __future__ import annotations

from lightning import Callback


def _steps(steps) -> set[int]:
    return {int(s) for s in ([steps] if isinstance(steps, (int, str)) else steps)}


class NonFiniteLossAt(Callback):
    """The objective's loss times ``value`` (``nan`` or ``inf``) on ``steps`` (from ``from_step`` on, every step),
    on the ranks in ``ranks`` (all when None): the loss and every gradient become non-finite."""

    def __init__(self, steps=(), value: str = "nan", from_step: int | None = None, ranks=None) -> None:
        self.steps, self.value, self.from_step = _steps(steps), float(value), from_step
        self.ranks = None if ranks is None else _steps(ranks)
        self._hook = None

    def _due(self, trainer) -> bool:
        step = trainer.global_step
        on_rank = self.ranks is None or trainer.global_rank in self.ranks
        return on_rank and (step in self.steps or (self.from_step is not None and step >= self.from_step))

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if self._due(trainer):
            def poison(module, args, output):
                return {**output, "loss": output["loss"] * self.value}
            self._hook = pl_module.objective.register_forward_hook(poison)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None


class InfWeightAfter(Callback):
    """After the optimiser step numbered ``step`` (a step with a finite loss and gradient), one weight becomes
    inf: what an update that overflows leaves behind."""

    def __init__(self, step: int) -> None:
        self.step = int(step)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.global_step == self.step + 1:  # global_step counts the step just taken
            param = next(p for p in pl_module.parameters() if p.requires_grad)
            param.data.view(-1)[0] = float("inf")
