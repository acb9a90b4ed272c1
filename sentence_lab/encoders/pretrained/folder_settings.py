"""What a model folder's sentence-transformers files say of its sentence vectors: the pooling
(``1_Pooling/config.json``: mean for all-MiniLM-L6-v2), whether they are normalised (a ``Normalize`` module) and the
longest input (``sentence_bert_config.json``'s ``max_seq_length``). A bare Hugging Face folder: mean pooling, no
normalisation, the model's position count."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sentence_lab.text.model_folders import read_json

POOLING_KEYS = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max"}
LIBRARY = "sentence_transformers.models."
UNDERSTOOD_MODULES = ("Transformer", "Pooling", "Normalize")


@dataclass(frozen=True)
class FolderSettings:
    pooling: str
    normalize: bool
    max_seq_length: int


def folder_settings(folder: Path, max_positions: int) -> FolderSettings:
    """The folder's pooling, normalisation and longest input; one line for a sentence-transformers module this
    encoder does not reproduce (a ``Dense`` layer after the pooling, say) or a pooling of two modes at once."""
    pooling, normalize = "mean", False
    modules_file = folder / "modules.json"
    modules = read_json_list(modules_file) if modules_file.is_file() else []
    for entry in modules:
        kind = str(entry.get("type", ""))
        name = kind.removeprefix(LIBRARY)
        if not kind.startswith(LIBRARY) or name not in UNDERSTOOD_MODULES:
            raise ValueError(f"{modules_file}: module {kind!r} is not one encoder=pretrained reproduces "
                             f"({', '.join(UNDERSTOOD_MODULES)}): use the folder without it or evaluate it with "
                             "encoder=sentence_transformers")
        if name == "Pooling":
            pooling = _pooling(folder / str(entry.get("path", "")) / "config.json")
        normalize = normalize or name == "Normalize"
    length = max_positions
    bert_config = folder / "sentence_bert_config.json"
    if bert_config.is_file():
        length = int(read_json(bert_config).get("max_seq_length") or length)
    return FolderSettings(pooling, normalize, min(length, max_positions))


def read_json_list(path: Path) -> list[dict]:
    """A JSON list of objects (``modules.json``); one line otherwise."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: not readable as JSON ({err})") from None
    if not isinstance(value, list) or not all(isinstance(entry, dict) for entry in value):
        raise ValueError(f"{path}: a list of modules was expected")
    return value


def _pooling(config_file: Path) -> str:
    config = read_json(config_file)
    modes = [mode for key, mode in POOLING_KEYS.items() if config.get(key)]
    others = [key for key, on in config.items() if key.startswith("pooling_mode") and on and key not in POOLING_KEYS]
    if len(modes) != 1 or others:
        raise ValueError(f"{config_file}: pooling {modes + others}: encoder=pretrained pools by one of mean, cls or "
                         "max")
    return modes[0]
