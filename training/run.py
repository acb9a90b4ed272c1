"""Compose the pieces a training config names and fit them."""
from __future__ import annotations

import logging
from typing import Any

import lightning as L
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig

from objectives.module import SentenceModel

log = logging.getLogger(__name__)


def _instantiate_group(group: DictConfig | None) -> list[Any]:
    """Instantiate every entry of a config group that holds several objects (callbacks, loggers)."""
    if not group:
        return []
    return [instantiate(entry) for entry in group.values() if isinstance(entry, DictConfig) and "_target_" in entry]


def build_model(cfg: DictConfig, datamodule) -> SentenceModel:
    model = SentenceModel(encoder=cfg.encoder, objective=cfg.objective, vocab=datamodule.vocab,
                          tokenizer=datamodule.tokenizer.to_dict(), optimizer=cfg.model.optimizer)
    log.info("Model: %s with %s, %d-d embeddings, %.2fM parameters", cfg.encoder._target_,
             cfg.objective._target_, model.output_dim,
             sum(p.numel() for p in model.parameters()) / 1e6)
    return model


def check_encoder_config(cfg: DictConfig) -> None:
    if "_target_" not in cfg.encoder or not str(cfg.encoder._target_).startswith("encoders."):
        raise ValueError(
            f"encoder {cfg.encoder.get('_target_')} is not a trainable encoder: "
            "use one of bow, gru, bigru, bilstm_max, bilstm_last, gatedconv (or their _paper variants)"
        )


def fit(cfg: DictConfig) -> tuple[L.Trainer, SentenceModel]:
    """Fit ``cfg.objective`` with ``cfg.encoder`` on ``cfg.data``; return the trainer and model."""
    check_encoder_config(cfg)
    L.seed_everything(cfg.seed, workers=True)
    datamodule = instantiate(cfg.data)
    datamodule.setup("fit")
    model = build_model(cfg, datamodule)
    trainer: L.Trainer = instantiate(cfg.trainer, callbacks=_instantiate_group(cfg.get("callbacks")),
                                     logger=_instantiate_group(cfg.get("logger")) or False)
    trainer.fit(model, datamodule=datamodule, ckpt_path=cfg.get("ckpt_path"))
    return trainer, model


def train(cfg: DictConfig) -> float | None:
    """``fit``, then return the monitored metric (what a sweeper optimises)."""
    trainer, _ = fit(cfg)
    metric = trainer.callback_metrics.get(cfg.monitor)
    value = float(metric) if isinstance(metric, torch.Tensor) else metric
    log.info("%s = %s; run directory: %s", cfg.monitor, value, trainer.default_root_dir)
    return value
