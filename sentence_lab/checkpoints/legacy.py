"""What checkpoints written by earlier versions hold differently, read as today's: classes named by the bare folder
names or by the modules they have since left, one vocabulary under ``vocab``, no tokenizer recorded."""
from __future__ import annotations

from typing import Any

# What a checkpoint that records no tokenizer was trained with (runs before tokenizers were saved read Moses tokens).
UNRECORDED_TOKENIZER = {"kind": "moses", "lowercase": True}

# Checkpoints written before the packages moved under sentence_lab name their classes by the bare folder names.
LEGACY_PACKAGES = ("text", "encoders", "objectives", "datamodules", "training", "evaluation", "adapters", "tools")

# Classes that moved to the module named as their config (objective=qt is sentence_lab/objectives/qt.py, ...).
MOVED_CLASSES = {
    "sentence_lab.objectives.quick_thoughts.QuickThoughts": "sentence_lab.objectives.qt.QuickThoughts",
    "sentence_lab.objectives.seq2seq.Seq2Seq": "sentence_lab.objectives.nmt.Seq2Seq",
    "sentence_lab.objectives.seq2seq.AutoEncoder": "sentence_lab.objectives.autoencoder.AutoEncoder",
    "sentence_lab.objectives.hinge.JBi": "sentence_lab.objectives.jbi.JBi",
    "sentence_lab.objectives.hinge.JPa": "sentence_lab.objectives.jpa.JPa",
}


def namespaced_targets(config: Any) -> Any:
    """``config`` with every ``_target_`` of an older checkpoint named as today: a bare folder name
    (``encoders.gru.GRUEncoder``) under ``sentence_lab``, a moved class (``MOVED_CLASSES``) at its module; other
    values unchanged."""
    if isinstance(config, dict):
        out = {key: namespaced_targets(value) for key, value in config.items()}
        target = out.get("_target_")
        if isinstance(target, str) and target.split(".", 1)[0] in LEGACY_PACKAGES:
            target = out["_target_"] = f"sentence_lab.{target}"
        if isinstance(target, str) and target in MOVED_CLASSES:
            out["_target_"] = MOVED_CLASSES[target]
        return out
    if isinstance(config, list):
        return [namespaced_targets(value) for value in config]
    return config


def saved_vocabs(checkpoint: dict) -> dict[str, list[str]]:
    """The vocabularies in a checkpoint by side (older checkpoints hold one, under ``vocab``)."""
    if "vocabs" in checkpoint:
        return dict(checkpoint["vocabs"])
    return {"source": checkpoint["vocab"]} if "vocab" in checkpoint else {}
