"""Compose the pieces a training config names, check they fit together, and fit them."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import lightning as L
from hydra.utils import get_class, instantiate
from omegaconf import DictConfig, open_dict

from evaluation.results import atomic_write_text
from objectives.contract import ObjectiveSpec, check_pairing
from objectives.module import SentenceModel

log = logging.getLogger(__name__)


def _instantiate_group(group: DictConfig | None) -> list[Any]:
    """Instantiate every entry of a config group that holds several objects (callbacks, loggers)."""
    if not group:
        return []
    return [instantiate(entry) for entry in group.values() if isinstance(entry, DictConfig) and "_target_" in entry]


def build_model(cfg: DictConfig, datamodule) -> SentenceModel:
    model = SentenceModel(encoder=cfg.encoder, objective=cfg.objective, vocabs=datamodule.vocabs,
                          tokenizers={side: t.to_dict() for side, t in datamodule.tokenizers.items()},
                          optimizer=cfg.model.optimizer)
    log.info("Model: %s with %s, %d-d embeddings, %.2fM parameters", cfg.encoder._target_,
             cfg.objective._target_, model.output_dim,
             sum(p.numel() for p in model.parameters()) / 1e6)
    return model


def check_encoder_config(cfg: DictConfig) -> None:
    if "_target_" not in cfg.encoder or not str(cfg.encoder._target_).startswith("encoders."):
        raise ValueError(
            f"encoder {cfg.encoder.get('_target_')} is not a trainable encoder: use one of bow, gru, bigru, "
            "bilstm_max, bilstm_last, gatedconv, mc_bilstm_max (or a variant named after its paper)"
        )


def objective_spec(cfg: DictConfig) -> ObjectiveSpec:
    return get_class(cfg.objective._target_).spec


def config_choice(cfg: DictConfig, group: str) -> str:
    """The config name chosen for ``group`` (``nli`` for ``objective=nli``), for messages."""
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        choice = HydraConfig.get().runtime.choices.get(group)
        if choice:
            return str(choice)
    return str(cfg[group].get("_target_", group)).rsplit(".", 1)[-1]


def newest_resumable_run(cfg: DictConfig) -> Path | None:
    """The most recently written ``last.ckpt`` of this task's runs (``logs/<task_name>/runs/*``), or None."""
    runs = Path(cfg.paths.log_dir) / str(cfg.task_name) / "runs"
    here = Path(cfg.paths.output_dir).resolve()
    candidates = [p for p in runs.glob("*/checkpoints/last.ckpt") if p.parent.parent.resolve() != here]
    return max(candidates, key=lambda p: p.stat().st_mtime) if candidates else None


def apply_resume(cfg: DictConfig) -> None:
    """``resume=true``: continue the newest run of this task from its ``last.ckpt``, writing into its directory."""
    if not cfg.get("resume") or cfg.get("ckpt_path"):
        return
    last = newest_resumable_run(cfg)
    if last is None:
        log.warning("resume=true: no last.ckpt under %s/%s/runs: starting a new run", cfg.paths.log_dir, cfg.task_name)
        return
    with open_dict(cfg):
        cfg.ckpt_path = str(last)
        cfg.paths.output_dir = str(last.parent.parent)
    log.info("resume=true: continuing %s from %s", cfg.paths.output_dir, last.name)


def fit(cfg: DictConfig) -> tuple[L.Trainer, SentenceModel]:
    """Fit ``cfg.objective`` with ``cfg.encoder`` on ``cfg.data``; return the trainer and model."""
    check_encoder_config(cfg)
    apply_resume(cfg)
    spec = objective_spec(cfg)
    with open_dict(cfg):  # the objective names the metric a run monitors unless monitor= says otherwise
        if cfg.get("monitor") is None:
            cfg.monitor, cfg.monitor_mode = spec.monitor, spec.monitor_mode
    L.seed_everything(cfg.seed, workers=True)
    datamodule = instantiate(cfg.data)
    check_pairing(config_choice(cfg, "objective"), spec, config_choice(cfg, "data"), datamodule)
    datamodule.setup("fit")
    model = build_model(cfg, datamodule)
    trainer: L.Trainer = instantiate(cfg.trainer, callbacks=_instantiate_group(cfg.get("callbacks")),
                                     logger=_instantiate_group(cfg.get("logger")) or False)
    for logger in trainer.loggers:  # what the run is, next to the model's own hyper-parameters
        logger.log_hyperparams({"tags": list(cfg.get("tags") or []), "objective_name": config_choice(cfg, "objective"),
                                "encoder_name": config_choice(cfg, "encoder"), "data_name": config_choice(cfg, "data"),
                                "seed": int(cfg.seed)})
    trainer.fit(model, datamodule=datamodule, ckpt_path=cfg.get("ckpt_path"))
    return trainer, model


def test(trainer: L.Trainer, model: SentenceModel, datamodule) -> dict[str, float]:
    """Score the best checkpoint (else the final weights) on the data's test sets; write test_results.json."""
    best = getattr(trainer.checkpoint_callback, "best_model_path", "") if trainer.checkpoint_callback else ""
    if trainer.fast_dev_run or not best:
        best = None
    results = trainer.test(model, datamodule=datamodule, ckpt_path=best, verbose=False)
    merged = {k: float(v) for r in results for k, v in r.items()}
    merged["checkpoint"] = best or "final weights"
    if trainer.is_global_zero:
        atomic_write_text(Path(trainer.default_root_dir) / "test_results.json", json.dumps(merged, indent=2))
        log.info("Test results (%s): %s", merged["checkpoint"],
                 ", ".join(f"{k}={v:.4f}" for k, v in merged.items() if isinstance(v, float)))
    return merged


def optimized_value(cfg: DictConfig, trainer: L.Trainer) -> tuple[str, float | None]:
    """The value ``train`` returns: ``optimized_metric`` (a logged metric such as ``val/context_acc``, or a score
    of the evaluation suite's last epoch such as ``probing/mean``, ``sts/STSBenchmark``), default ``monitor``."""
    from evaluation.callback import SentEvalCallback

    name = str(cfg.get("optimized_metric") or cfg.monitor)
    metric = trainer.callback_metrics.get(name)
    if metric is not None:
        return name, float(metric)
    for callback in trainer.callbacks:
        if isinstance(callback, SentEvalCallback):
            scores = callback.final_scores()
            if name in scores:
                return name, scores[name]
            log.warning("optimized_metric=%s: not among the logged metrics nor the suite's scores (%s)", name,
                        ", ".join(sorted(scores)) or "none")
    return name, None


def train(cfg: DictConfig) -> float | None:
    """``fit``, test on the data's test sets (``test_after_fit``), return ``optimized_metric`` (default: the
    monitored metric), what a sweeper optimises. The composed config is printed (``print_config``) and saved as
    ``config_tree.log``."""
    from training.config_tree import config_tree

    config_tree(cfg, save_to=Path(cfg.paths.output_dir) / "config_tree.log", show=bool(cfg.get("print_config", True)))
    trainer, model = fit(cfg)
    name, value = optimized_value(cfg, trainer)
    log.info("%s = %s; run directory: %s", name, value, trainer.default_root_dir)
    if cfg.get("test_after_fit", True) and getattr(trainer.datamodule, "test_names", None):
        test(trainer, model, trainer.datamodule)
    return value
