"""Compose the pieces a training config names, check they fit together, and fit them."""
from __future__ import annotations

import json
import logging
import signal
from pathlib import Path
from typing import Any

import lightning as L
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from hydra.utils import get_class, instantiate
from lightning.pytorch.callbacks import EarlyStopping, Timer
from lightning.pytorch.loggers import WandbLogger
from lightning.pytorch.trainer.states import TrainerStatus
from lightning.pytorch.utilities.exceptions import SIGTERMException
from omegaconf import DictConfig, open_dict

from sentence_lab.checkpoints.callbacks import save_points_first
from sentence_lab.checkpoints.choice import (
    check_checkpoint_path,
    newest_resumable_checkpoint,
    resumable_checkpoint_in,
    run_dir_of,
)
from sentence_lab.datamodules.pairs import PairsDataModule
from sentence_lab.encoders.base import is_trainable
from sentence_lab.evaluation.results import ResultsDocument, document_of_test_scores, to_jsonable
from sentence_lab.objectives.contract import LABELLED_PAIRS, TRIPLES, ObjectiveSpec, check_pairing, spec_of
from sentence_lab.runs.cluster_environment import trainer_plugins
from sentence_lab.runs.config_tree import config_tree
from sentence_lab.runs.errors import PeerLost, RunInterrupted
from sentence_lab.runs.loggers import ResumedCurves
from sentence_lab.runs.model_text import adopt_model_tokenizer
from sentence_lab.runs.optuna_sweep import optimized_names
from sentence_lab.runs.rank_liveness import RankLiveness, silent_ranks
from sentence_lab.runs.renamed_keys import move_renamed_nodes
from sentence_lab.runs.run_dir import check_run_dir_free, move_into_run
from sentence_lab.runs.settings_check import check_resume_settings, check_settings
from sentence_lab.runs.trial_pruning import TrialPruning, trial_callbacks
from sentence_lab.stop_signals import Stopped
from sentence_lab.text.config_values import plain
from sentence_lab.text.files import atomic_write_text
from sentence_lab.training.eval_suite import EvalSuiteCallback
from sentence_lab.training.module import SentenceModel
from sentence_lab.training.non_finite import NonFiniteSteps
from sentence_lab.training.non_finite_checks import NonFiniteTraining
from sentence_lab.training.trainer_state import callbacks_of, datamodule_of, fast_dev_run_of

log = logging.getLogger(__name__)


def _instantiate_group(group: DictConfig | None) -> list[Any]:
    """Instantiate every entry of a config group that holds several objects (callbacks, loggers)."""
    if not group:
        return []
    return [instantiate(entry) for entry in group.values() if isinstance(entry, DictConfig) and "_target_" in entry]


def build_model(cfg: DictConfig, datamodule) -> SentenceModel:
    model = SentenceModel(encoder=cfg.encoder, objective=cfg.objective, vocabs=datamodule.vocabs,
                          tokenizers={side: t.to_dict() for side, t in datamodule.tokenizers.items()},
                          optimizer=cfg.model.optimizer, scheduler=cfg.model.get("scheduler"),
                          encoder_lr_scale=cfg.model.get("encoder_lr_scale", 1.0),
                          encoder_frozen_steps=cfg.model.get("encoder_frozen_steps", 0))
    compile_options = cfg.model.get("compile", False)
    if compile_options:
        options = {} if compile_options is True else plain(compile_options)
        log.info("torch.compile on %d encoder(s), %s", model.compile_encoders(**options), options or "defaults")
    log.info("Model: %s with %s, %d-d embeddings, %.2fM parameters", cfg.encoder._target_,
             cfg.objective._target_, model.output_dim,
             sum(p.numel() for p in model.parameters()) / 1e6)
    return model


def check_encoder_config(cfg: DictConfig) -> None:
    """``train.py`` takes trainable encoders only (``sentence_lab.encoders.base.is_trainable``)."""
    if "_target_" not in cfg.encoder or not is_trainable(str(cfg.encoder._target_)):
        raise ValueError(
            f"encoder {cfg.encoder.get('_target_')} is not a trainable encoder (a "
            "sentence_lab.encoders.base.SentenceEncoder): use one of bow, gru, bigru, bilstm_max, bilstm_last, "
            "gatedconv, transformer, pretrained, mc_bilstm_max (or a variant named after its paper); evaluation-only "
            "encoders "
            "(bow_glove, minilm, precomputed, ...) go to evaluate.py"
        )


def objective_spec(cfg: DictConfig) -> ObjectiveSpec:
    """What the configured objective consumes, given its settings (``objectives.contract.spec_of``)."""
    return spec_of(get_class(cfg.objective._target_), cfg.objective)


def config_choice(cfg: DictConfig, group: str) -> str:
    """The config name chosen for ``group`` (``nli`` for ``objective=nli``), for messages."""
    if HydraConfig.initialized():
        choice = HydraConfig.get().runtime.choices.get(group)
        if choice:
            return str(choice)
    return str(cfg[group].get("_target_", group)).rsplit(".", 1)[-1]


def resolve_resume(cfg: DictConfig) -> None:
    """``resume=true`` without ``ckpt_path``: the run in this directory when it holds one (``hydra.run.dir=<run>``,
    a sweep's job directory), else, outside a sweep, the newest run of this task; its checkpoint becomes
    ``ckpt_path``."""
    if cfg.get("ckpt_path") or not cfg.get("resume"):
        return
    ckpt = resumable_checkpoint_in(Path(str(cfg.paths.output_dir)))
    in_a_sweep = HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN
    if ckpt is None and not in_a_sweep:  # a sweep's job resumes its own directory or starts anew, never another run
        ckpt = newest_resumable_checkpoint(cfg)
    if ckpt is None:
        log.warning("resume=true: no readable checkpoint under %s/%s/runs: starting a new run", cfg.paths.log_dir,
                    cfg.task_name)
        return
    with open_dict(cfg):
        cfg.ckpt_path = str(ckpt)


def continue_in_run_dir(cfg: DictConfig) -> None:
    """``ckpt_path=<run>/checkpoints/<file>`` of a train.py run (``resume=true`` has set it): the run goes on in that
    run's directory, and what this start wrote (its log, its config) moves there."""
    if not cfg.get("ckpt_path"):
        return
    ckpt = Path(str(cfg.ckpt_path)).resolve()
    # resume=true found it in a run's checkpoints/ folder; a ckpt_path given by hand, in a train.py run directory
    run = ckpt.parent.parent if cfg.get("resume") and ckpt.parent.name == "checkpoints" else run_dir_of(ckpt)
    stub = Path(str(cfg.paths.output_dir))
    if run is None or run == stub.resolve():
        return
    with open_dict(cfg):
        cfg.paths.output_dir = str(run)
    move_into_run(stub, run)
    log.info("continuing %s from %s", run, Path(str(cfg.ckpt_path)).name)


def stop_reason(trainer: L.Trainer) -> str:
    """Why ``trainer.fit`` returned: the planned amount of work, or a budget or rule that cut it short."""
    timer = next((c for c in callbacks_of(trainer) if isinstance(c, Timer)), None)
    remaining = timer.time_remaining() if timer is not None else None
    if remaining is not None and remaining <= 0:
        return "max_time"
    if any(isinstance(c, EarlyStopping) and c.stopped_epoch > 0 for c in callbacks_of(trainer)):
        return "early_stopping"
    if any(isinstance(c, TrialPruning) and c.pruned_at is not None for c in callbacks_of(trainer)):
        return "pruned"
    if trainer.max_steps != -1 and trainer.global_step >= trainer.max_steps:
        return "max_steps"
    return "max_epochs" if trainer.current_epoch >= (trainer.max_epochs or 0) else "stopped"


def process_group_timeout_s(trainer: L.Trainer) -> float | None:
    """The data-parallel strategy's collective timeout in seconds (``trainer.strategy.timeout``), if it has one."""
    timeout = getattr(trainer.strategy, "_timeout", None)
    return timeout.total_seconds() if timeout is not None else None


def stop_local_ranks(trainer: L.Trainer) -> None:
    """Kill the ranks this process started (Lightning's launcher does so on Ctrl-C only): a peer that hangs would
    otherwise outlive the run that gave up on it."""
    kill = getattr(trainer.strategy.launcher, "kill", None)
    if kill is not None:
        kill(signal.SIGKILL)


def non_finite_guard(trainer: L.Trainer) -> NonFiniteSteps | None:
    """The run's ``NonFiniteSteps`` callback, if it has one."""
    return next((c for c in callbacks_of(trainer) if isinstance(c, NonFiniteSteps)), None)


def write_run_status(trainer: L.Trainer, stopped_by: str | None = None) -> dict[str, Any]:
    """``run_status.json``: steps done of steps planned, why training stopped (``stopped_by`` when the caller
    knows, e.g. ``non_finite_steps``) and the steps skipped for a non-finite loss or gradient; a cut run is said so."""
    estimated = trainer.estimated_stepping_batches
    planned = int(estimated) if estimated != float("inf") else None
    status: dict[str, Any] = {"steps_done": int(trainer.global_step), "steps_planned": planned,
                              "stopped_by": stopped_by or stop_reason(trainer),
                              "epochs_done": int(trainer.current_epoch)}
    guard = non_finite_guard(trainer)
    if guard is not None and status["stopped_by"] in ("max_epochs", "max_steps") and \
            guard.share_exceeded(status["steps_done"]) is not None:
        status["stopped_by"] = "non_finite_share"
    status["complete"] = status["stopped_by"] in ("max_epochs", "max_steps")
    if guard is not None:
        status.update(guard.summary())
    pruning = next((c for c in callbacks_of(trainer) if isinstance(c, TrialPruning)), None)
    if pruning is not None:  # an Optuna sweep's trial: which, and what it reported
        status["optuna_trial"] = {"trial_id": pruning.trial_id, "pruned_at_epoch": pruning.pruned_at,
                                  "reported": {str(epoch): value for epoch, value in pruning.reported.items()}}
    if trainer.is_global_zero:
        atomic_write_text(Path(trainer.default_root_dir) / "run_status.json", json.dumps(status, indent=2) + "\n")
    if not status["complete"]:
        log.warning("training stopped by %s after %d of %s planned steps: this run's weights are not those of the "
                    "full recipe (run_status.json)", status["stopped_by"], status["steps_done"], planned or "?")
    if status.get("skipped_steps"):
        log.warning("%d step(s) skipped for a non-finite loss or gradient (steps %s; run_status.json)",
                    status["skipped_steps"], ", ".join(map(str, status["skipped_step_numbers"][:10])))
    return status


def prepare_run(cfg: DictConfig) -> None:
    """Before any data is read: the encoder, the settings, the run directory (never another run's) and ``ckpt_path``
    (readable, and trained with this encoder and objective) are checked (one-line errors), and a resumed run moves
    into its own directory. Doing it again changes nothing."""
    move_renamed_nodes(cfg)
    check_encoder_config(cfg)
    adopt_model_tokenizer(cfg)
    check_settings(cfg)
    resolve_resume(cfg)
    check_run_dir_free(cfg)
    check_checkpoint_path(cfg)
    check_resume_settings(cfg)
    continue_in_run_dir(cfg)


def fit(cfg: DictConfig) -> tuple[L.Trainer, SentenceModel]:
    """Fit ``cfg.objective`` with ``cfg.encoder`` on ``cfg.data``; return the trainer and model.
    ``prepare_run`` first; a run stopped by a signal raises ``RunInterrupted`` after its checkpoint is written (in
    any phase under ``sentence_lab.stop_signals.stops_raise``: data preparation, training, the suite)."""
    try:
        return _fit(cfg)
    except Stopped as stop:  # before training started: nothing to save
        raise RunInterrupted(stop.signum, None, Path(str(cfg.paths.output_dir))) from None


def _fit(cfg: DictConfig) -> tuple[L.Trainer, SentenceModel]:
    prepare_run(cfg)
    spec = objective_spec(cfg)
    with open_dict(cfg):  # the objective names the metric a run monitors unless monitor= says otherwise
        if cfg.get("monitor") is None:
            cfg.monitor, cfg.monitor_mode = spec.monitor, spec.monitor_mode
    L.seed_everything(cfg.seed, workers=True)
    datamodule = instantiate(cfg.data)
    if spec.batch is TRIPLES and isinstance(datamodule, PairsDataModule) and datamodule.batch is LABELLED_PAIRS:
        datamodule.yield_triples()  # NLI pairs regrouped by premise for an objective of triples (supervised SimCSE)
    check_pairing(config_choice(cfg, "objective"), spec, config_choice(cfg, "data"), datamodule)
    datamodule.setup("fit")
    model = build_model(cfg, datamodule)
    # RankLiveness: with more than one rank, each keeps a sign of life so that a lost one can be named; ResumedCurves:
    # a resumed run's TensorBoard curves draw each step once; last.ckpt saved at an epoch's end before the suite runs
    callbacks = save_points_first(_instantiate_group(cfg.get("callbacks")) + trial_callbacks(cfg) +
                                  [RankLiveness(), ResumedCurves()])
    loggers = _instantiate_group(cfg.get("logger")) or False
    trainer: L.Trainer = instantiate(cfg.trainer, callbacks=callbacks, logger=loggers, **trainer_plugins(cfg.trainer))
    for logger in trainer.loggers:  # what the run is, next to the model's own hyper-parameters
        logger.log_hyperparams({"tags": list(cfg.get("tags") or []), "objective_name": config_choice(cfg, "objective"),
                                "encoder_name": config_choice(cfg, "encoder"), "data_name": config_choice(cfg, "data"),
                                "seed": int(cfg.seed)})
    try:
        trainer.fit(model, datamodule=datamodule, ckpt_path=cfg.get("ckpt_path"))
    except Stopped as stop:  # Lightning has called on_exception: interrupted.ckpt is written
        raise RunInterrupted(stop.signum, trainer.global_step, Path(trainer.default_root_dir)) from None
    except SIGTERMException:
        raise RunInterrupted(signal.SIGTERM, trainer.global_step, Path(trainer.default_root_dir)) from None
    except SystemExit as stop:  # Lightning's graceful Ctrl-C: interrupted.ckpt written, then sys.exit(1)
        if trainer.state.status == TrainerStatus.INTERRUPTED:
            raise RunInterrupted(signal.SIGINT, trainer.global_step, Path(trainer.default_root_dir)) from None
        raise stop
    except NonFiniteTraining:
        write_run_status(trainer, stopped_by="non_finite_steps")
        raise
    except RuntimeError as err:
        if trainer.world_size > 1 and PeerLost.matches(err):
            lost = silent_ranks(Path(trainer.default_root_dir), trainer.world_size, trainer.global_rank)
            stop_local_ranks(trainer)
            raise PeerLost(trainer.global_rank, process_group_timeout_s(trainer), err, lost) from err
        raise
    if not fast_dev_run_of(trainer):
        write_run_status(trainer)
    guard = non_finite_guard(trainer)
    too_many = guard.share_exceeded(int(trainer.global_step)) if guard is not None else None
    if too_many is not None:
        raise too_many
    return trainer, model


def test(trainer: L.Trainer, model: SentenceModel, datamodule) -> ResultsDocument:
    """Score the best checkpoint (else the final weights) on the data's test sets; write test_results.json."""
    best = getattr(trainer.checkpoint_callback, "best_model_path", "") if trainer.checkpoint_callback else ""
    if fast_dev_run_of(trainer) or not best:
        best = None
    results = trainer.test(model, datamodule=datamodule, ckpt_path=best, verbose=False)
    merged = {k: float(v) for r in results for k, v in r.items()}
    doc = document_of_test_scores(merged, best, encoder=model.describe())
    if trainer.is_global_zero:
        atomic_write_text(Path(trainer.default_root_dir) / "test_results.json", json.dumps(to_jsonable(doc), indent=2))
        log.info("Test results (%s): %s", doc["checkpoint"], ", ".join(f"{k}={v:.4f}" for k, v in merged.items()))
    return doc


def metric_value(name: str, trainer: L.Trainer) -> float | None:
    """A logged metric (``val/context_acc``) or a score of the evaluation suite's last epoch (``probing/mean``,
    ``relatedness/STSBenchmark``); None (with a warning) when neither has it."""
    metric = trainer.callback_metrics.get(name)
    if metric is not None:
        return float(metric)
    for callback in callbacks_of(trainer):
        if isinstance(callback, EvalSuiteCallback):
            scores = callback.final_scores()
            if name in scores:
                return scores[name]
            log.warning("optimized_metric=%s: not among the logged metrics nor the suite's scores (%s)", name,
                        ", ".join(sorted(scores)) or "none")
    return None


def optimized_value(cfg: DictConfig, trainer: L.Trainer) -> tuple[str, float | None | list[float | None]]:
    """The value ``train`` returns: ``optimized_metric`` (see ``metric_value``), default ``monitor``; a list of
    names (several objectives at once, e.g. ``[probing/mean, similarity/mean]``) gives a list of values."""
    names = optimized_names(cfg)
    if cfg.get("optimized_metric") is None or isinstance(cfg.optimized_metric, str):
        return names[0], metric_value(names[0], trainer)
    return ", ".join(names), [metric_value(name, trainer) for name in names]


def train(cfg: DictConfig) -> float | None | list[float | None]:
    """``fit``, test on the data's test sets (``test_after_fit``), return ``optimized_metric`` (default: the
    monitored metric), what a sweeper optimises. The composed config is printed (``print_config``) and saved as
    ``config_tree.log``."""
    prepare_run(cfg)
    config_tree(cfg, save_to=Path(cfg.paths.output_dir) / "config_tree.log", show=bool(cfg.get("print_config", True)))
    trainer, model = fit(cfg)
    name, value = optimized_value(cfg, trainer)
    log.info("%s = %s; run directory: %s", name, value, trainer.default_root_dir)
    if cfg.get("test_after_fit", True) and getattr(datamodule_of(trainer), "test_names", None):
        test(trainer, model, datamodule_of(trainer))
    close_trackers(trainer)
    return value


def close_trackers(trainer: L.Trainer) -> None:
    """End the run in the trackers that keep one open past the Trainer (W&B): its log is complete on disk, and the
    next job of an in-process sweep starts a run of its own.

    W&B's ``finish`` returns before its service has closed the run's log: the log is written out when the service
    closes the stream, after ``finish`` (seen on a busy machine: a 7-byte log, the header alone, right after it).
    ``wandb.teardown`` waits for the service to close every stream and exit; the next run starts a new one."""
    finished = False
    for logger in trainer.loggers:
        if isinstance(logger, WandbLogger) and logger._experiment is not None:
            logger.experiment.finish()
            finished = True
    if finished:
        import wandb  # the optional trackers extra: present, since a W&B run was open

        wandb.teardown()
