"""Learning-rate schedules: the papers' recipes as callbacks, and per-step schedules for ``model.scheduler``."""
from __future__ import annotations

import logging

from lightning import Callback, LightningModule, Trainer
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR

log = logging.getLogger(__name__)


class InferSentSchedule(Callback):
    """InferSent's SGD schedule (Conneau et al. 2017, section 3.3; ``train_nli.py``): the learning rate is
    multiplied by ``decay`` at the start of every epoch after the first, divided by ``shrink`` whenever the
    monitored dev score does not beat the best so far, and training stops once it falls below ``min_lr``."""

    def __init__(self, monitor: str = "val/acc", decay: float = 0.99, shrink: float = 5.0,
                 min_lr: float = 1e-5) -> None:
        self.monitor, self.decay, self.shrink, self.min_lr = monitor, decay, shrink, min_lr
        self.best: float | None = None

    @staticmethod
    def _scale(trainer: Trainer, factor: float) -> float:
        lr = 0.0
        for optimizer in trainer.optimizers:
            for group in optimizer.param_groups:
                group["lr"] *= factor
                lr = group["lr"]
        return lr

    def on_train_epoch_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if trainer.current_epoch > 0:
            self._scale(trainer, self.decay)

    def on_validation_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if trainer.sanity_checking or self.monitor not in trainer.callback_metrics:
            return
        value = float(trainer.callback_metrics[self.monitor])
        if self.best is None or value > self.best:
            self.best = value
            return
        lr = self._scale(trainer, 1.0 / self.shrink)
        log.info("%s %.4f did not beat %.4f: learning rate divided by %g, now %.3g", self.monitor, value, self.best,
                 self.shrink, lr)
        if lr < self.min_lr:
            log.info("learning rate below %g: training stops", self.min_lr)
            trainer.should_stop = True

    def state_dict(self) -> dict:
        return {"best": self.best}

    def load_state_dict(self, state_dict: dict) -> None:
        self.best = state_dict.get("best")


def warmup_linear_decay(optimizer: Optimizer, total_steps: int, warmup: float = 0.1) -> LambdaLR:
    """The learning rate rises linearly from 0 over the first ``warmup`` share of the planned steps, then falls
    linearly to 0 at the last one (``model.scheduler``; stepped every optimiser step)."""
    if not 0.0 <= warmup < 1.0:
        raise ValueError(f"model.scheduler.warmup={warmup}: it must be a share of the steps in [0, 1)")
    total = max(int(total_steps), 1)
    rise = max(int(round(warmup * total)), 1)

    def factor(step: int) -> float:
        if step < rise:
            return (step + 1) / rise
        return max(0.0, (total - step) / max(total - rise, 1))

    return LambdaLR(optimizer, factor)
