"""Shared fixtures for the encoder tests: a tiny vocabulary and composed encoder configs."""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import DictConfig

from sentence_lab.text import SPECIALS, Vocab
from tests.helpers.train_config import is_text_encoder_config

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
ENCODER_CONF_DIR = CONF_DIR / "encoder"
# text encoders (bow_glove, length, minilm, ...) belong to the evaluation side; configs named after a paper
# (<encoder>_<author><year>) are too big to train in tests; mc_* (several encoders side by side) has its own tests in
# test_multichannel.py; pretrained reads a model's own vocabulary, not a word list, and has its own tests in
# test_pretrained.py (against sentence-transformers' vectors).
PAPER_NAME = re.compile(r"_[a-z]+\d{4}$")
OWN_VOCABULARY = ("pretrained",)
TRAINABLE_CONFIGS = sorted(
    p.stem for p in ENCODER_CONF_DIR.glob("*.yaml")
    if not PAPER_NAME.search(p.stem) and not is_text_encoder_config(p.stem) and not p.stem.startswith("mc_")
    and p.stem not in OWN_VOCABULARY
)
PAPER_CONFIGS = sorted(p.stem for p in ENCODER_CONF_DIR.glob("*.yaml") if PAPER_NAME.search(p.stem))

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "home", "quickly", "zzqxv_not_a_word"]


def compose_encoder(name: str, overrides: list[str] | None = None) -> DictConfig:
    """The ``encoder`` node of ``conf/`` with ``encoder=<name>`` selected, as Hydra composes it."""
    extra = [f"encoder.{o}" for o in overrides or []]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(overrides=[f"+encoder={name}", *extra])
    return cfg.encoder


@pytest.fixture
def vocab() -> Vocab:
    return Vocab(list(SPECIALS) + WORDS)


def build_encoder_from(name: str, vocab: Vocab, overrides: list[str] | None = None) -> torch.nn.Module:
    """Compose ``encoder=<name>`` and build it the way training code does: partial, then ``vocab=``."""
    return instantiate(compose_encoder(name, overrides), _partial_=True)(vocab=vocab)


@pytest.fixture
def encoder_config() -> Callable[..., DictConfig]:
    return compose_encoder


@pytest.fixture
def build_encoder(vocab: Vocab) -> Callable[..., torch.nn.Module]:
    """``build_encoder(name, overrides=None)`` with the tiny test vocabulary."""
    return lambda name, overrides=None: build_encoder_from(name, vocab, overrides)


@pytest.fixture(params=TRAINABLE_CONFIGS)
def trainable_config_name(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def trainable_config_names() -> list[str]:
    return TRAINABLE_CONFIGS


@pytest.fixture
def paper_config_names() -> list[str]:
    return PAPER_CONFIGS


@pytest.fixture(autouse=True)
def _seeded() -> None:
    torch.manual_seed(0)
