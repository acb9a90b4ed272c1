"""Config keys that were renamed, still accepted for a while with a deprecation message.

``callbacks.senteval`` became ``callbacks.eval_suite``: the per-epoch callback runs this project's evaluation suite,
not Facebook's SentEval. Command-line overrides are rewritten before Hydra composes them, and a ``callbacks.senteval``
node from a config file of one's own is merged into ``callbacks.eval_suite``; either way a warning names the new key.
"""
from __future__ import annotations

import re
import warnings

from omegaconf import DictConfig, OmegaConf, open_dict

RENAMED = {"callbacks.senteval": "callbacks.eval_suite"}
_PATTERNS = {old: re.compile(rf"(?<![\w.]){re.escape(old)}(?![\w])") for old in RENAMED}


def _warn(old: str) -> None:
    warnings.warn(f"{old} is deprecated: use {RENAMED[old]} (same settings)", FutureWarning, stacklevel=3)


def renamed_overrides(overrides: list[str]) -> list[str]:
    """The overrides with every renamed key (``~callbacks.senteval``, ``callbacks.senteval.tasks=[..]``,
    ``evaluation@callbacks.senteval.params=full``) spelled the new way."""
    out = []
    for override in overrides:
        for old, pattern in _PATTERNS.items():
            if pattern.search(override):
                _warn(old)
                override = pattern.sub(RENAMED[old], override)
        out.append(override)
    return out


def move_renamed_nodes(cfg: DictConfig) -> None:
    """Merge a ``callbacks.senteval`` node (from a config file written before the rename) into the new key."""
    for old, new in RENAMED.items():
        parent_key, old_leaf = old.rsplit(".", 1)
        parent = OmegaConf.select(cfg, parent_key)
        if not isinstance(parent, DictConfig) or old_leaf not in parent:
            continue
        _warn(old)
        new_leaf = new.rsplit(".", 1)[1]
        with open_dict(parent):
            node = parent.pop(old_leaf)
            if node is not None:
                current = parent.get(new_leaf)
                parent[new_leaf] = node if current is None else OmegaConf.merge(current, node)
