"""A run that is an Optuna trial: it reports its score after every evaluation and stops when the pruner says.

An Optuna sweep (``sentence_lab.runs.optuna_sweep``) gives each job ``optuna_trial.storage``, ``.study_name`` and
``.id``; ``trial_callbacks`` turns them into a ``TrialPruning`` callback. After every evaluation of the per-epoch
suite (epoch 0, the untrained model, included; without the suite, after every validation) rank 0 reports
``optimized_metric`` at step = epochs trained and asks the study's pruner; every rank receives the answer (a
broadcast), so under DDP all ranks stop at the same epoch. A pruned run stops like a finished one (exit 0, its
checkpoints and evaluation JSONs kept, ``run_status.json`` ``stopped_by: pruned``), logs ``optuna/pruned_at_epoch``
to its loggers, and sets the trial's ``pruned_at_epoch`` attribute, from which the sweep records it as pruned.
"""
from __future__ import annotations

import logging
import math

import optuna
from hydra.core.hydra_config import HydraConfig
from hydra.utils import instantiate
from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.callbacks import Callback
from omegaconf import DictConfig

from sentence_lab.optuna_storage import PRUNED_AT, open_storage
from sentence_lab.runs.optuna_sweep import optimized_names
from sentence_lab.training.eval_suite import EvalSuiteCallback
from sentence_lab.training.trainer_state import callbacks_of, fast_dev_run_of

log = logging.getLogger(__name__)


class TrialPruning(Callback):
    """Report ``metric`` to trial ``trial_id`` of ``study_name`` in ``storage`` after every evaluation; stop the run
    when ``pruner`` prunes it (see the module)."""

    def __init__(self, storage: str, study_name: str, trial_id: int, metric: str,
                 pruner: optuna.pruners.BasePruner | None = None) -> None:
        self.storage = storage
        self.study_name = study_name
        self.trial_id = int(trial_id)
        self.metric = metric
        self.pruner = pruner if pruner is not None else optuna.pruners.NopPruner()
        self.trial: optuna.Trial | None = None  # rank 0 only
        self.pruned_at: int | None = None
        self.reported: dict[int, float] = {}
        self._suite: EvalSuiteCallback | None = None
        self._told_missing = False

    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        if stage != "fit":
            return
        if trainer.is_global_zero and self.trial is None:
            study = optuna.load_study(study_name=self.study_name, storage=open_storage(self.storage),
                                      pruner=self.pruner, sampler=optuna.samplers.RandomSampler())
            self.trial = optuna.Trial(study, self.trial_id)
        suites = [c for c in callbacks_of(trainer) if isinstance(c, EvalSuiteCallback)]
        if suites and self._suite is None:
            self._suite = suites[0]
            self._suite.after_evaluation.append(self.after_evaluation)

    def on_validation_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        """Without the suite, the logged metric after every validation (step = epochs trained)."""
        if self._suite is None and not trainer.sanity_checking and not fast_dev_run_of(trainer):
            self.after_evaluation(trainer, int(trainer.current_epoch) + 1, None)

    def value(self, trainer: Trainer, scores: dict[str, float] | None) -> float | None:
        """``metric`` now: a score of the evaluation just made, else a logged metric."""
        if scores and self.metric in scores:
            return float(scores[self.metric])
        logged = trainer.callback_metrics.get(self.metric)
        return float(logged) if logged is not None else None

    def after_evaluation(self, trainer: Trainer, epoch: int, scores: dict[str, float] | None) -> None:
        """Rank 0 reports and asks the pruner; every rank takes its answer (called on every rank)."""
        prune = False
        if trainer.is_global_zero and self.trial is not None and self.pruned_at is None:
            value = self.value(trainer, scores)
            if value is None or not math.isfinite(value):
                if not self._told_missing:
                    log.warning("optuna trial %d: no finite %s after epoch %d (the suite's scores: %s): not reported",
                                self.trial.number, self.metric, epoch, ", ".join(sorted(scores or {})) or "none")
                    self._told_missing = True
            else:
                try:
                    self.trial.report(value, epoch)
                    self.reported[epoch] = value
                    prune = self.trial.should_prune()
                except Exception as err:  # noqa: BLE001 - the storage failing never costs the run (nor hangs a rank)
                    log.error("optuna trial %d: reporting %s after epoch %d failed: %s: %s", self.trial.number,
                              self.metric, epoch, type(err).__name__, err)
        if trainer.world_size > 1:
            prune = bool(trainer.strategy.broadcast(prune, src=0))
        if prune:
            self.stop(trainer, epoch)

    def stop(self, trainer: Trainer, epoch: int) -> None:
        self.pruned_at = epoch
        trainer.should_stop = True
        if trainer.is_global_zero:
            if self.trial is not None:
                self.trial.set_user_attr(PRUNED_AT, epoch)  # said once the decision is every rank's
                log.info("optuna trial %d pruned after epoch %d (%s %.4f): training stops here", self.trial.number,
                         epoch, self.metric, self.reported.get(epoch, float("nan")))
            for logger in trainer.loggers:
                try:
                    logger.log_metrics({"optuna/pruned_at_epoch": float(epoch)}, step=epoch)
                except Exception as err:  # noqa: BLE001 - a logger's failure never costs the run
                    log.error("optuna: logging to %s failed: %s", type(logger).__name__, err)


def trial_callbacks(cfg: DictConfig) -> list[Callback]:
    """``[TrialPruning]`` when this run is an Optuna sweep's trial (``optuna_trial.id`` set), else ``[]``. The
    pruner is the sweep's (``hydra.sweeper.pruner``); the metric ``optimized_metric`` (one: Optuna prunes
    single-objective studies only)."""
    spec = cfg.get("optuna_trial")
    if not spec or spec.get("id") is None:
        return []
    names = optimized_names(cfg)
    if len(names) != 1:  # several objectives: the trial only reports its final values
        return []
    pruner = None
    if HydraConfig.initialized():
        pruner_cfg = HydraConfig.get().sweeper.get("pruner")
        pruner = instantiate(pruner_cfg) if pruner_cfg else None
    return [TrialPruning(str(spec.storage), str(spec.study_name), int(spec.id), names[0], pruner)]
