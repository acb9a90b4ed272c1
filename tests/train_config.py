"""Compose the training config for tests, as ``train.py`` would."""
from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, open_dict

ROOT = Path(__file__).resolve().parents[1]


def compose_train_cfg(tiny_corpus: Path, out: Path, overrides: list[str]) -> DictConfig:
    """The ``train`` config on a fixture corpus, writing to ``out``, as ``train.py`` would compose it."""
    base = [f"data.train_dir={tiny_corpus / 'train'}", f"data.valid_dir={tiny_corpus / 'valid'}",
            f"paths.cache_dir={out / 'cache'}", "data.batch_size=8", "data.preprocess_workers=0"]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=base + overrides, return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    with open_dict(cfg):
        cfg.paths.output_dir = str(out)
        del cfg.hydra
    return cfg
