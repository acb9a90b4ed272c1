"""Hydra hands configured values over as OmegaConf nodes; the classes that keep them keep plain Python."""
from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf


def plain(value: Any) -> Any:
    """``value`` as plain dicts and lists with interpolations resolved if it is an OmegaConf node, else itself."""
    return OmegaConf.to_container(value, resolve=True) if isinstance(value, (DictConfig, ListConfig)) else value
