"""What checkpoints written by earlier versions hold differently, read as today's: classes named by the bare folder
names, one vocabulary under ``vocab``, no tokenizer recorded."""
from __future__ import annotations

from typing import Any

# What a checkpoint that records no tokenizer was trained with (runs before tokenizers were saved read Moses tokens).
UNRECORDED_TOKENIZER = {"kind": "moses", "lowercase": True}

# Checkpoints written before the packages moved under sentence_lab name their classes by the bare folder names.
LEGACY_PACKAGES = ("text", "encoders", "objectives", "datamodules", "training", "evaluation", "adapters", "tools")


def namespaced_targets(config: Any) -> Any:
    """``config`` with every ``_target_`` of a checkpoint written before the move (``encoders.gru.GRUEncoder``)
    named as today (``sentence_lab.encoders.gru.GRUEncoder``); other values unchanged."""
    if isinstance(config, dict):
        out = {key: namespaced_targets(value) for key, value in config.items()}
        target = out.get("_target_")
        if isinstance(target, str) and target.split(".", 1)[0] in LEGACY_PACKAGES:
            out["_target_"] = f"sentence_lab.{target}"
        return out
    if isinstance(config, list):
        return [namespaced_targets(value) for value in config]
    return config


def saved_vocabs(checkpoint: dict) -> dict[str, list[str]]:
    """The vocabularies in a checkpoint by side (older checkpoints hold one, under ``vocab``)."""
    if "vocabs" in checkpoint:
        return dict(checkpoint["vocabs"])
    return {"source": checkpoint["vocab"]} if "vocab" in checkpoint else {}
