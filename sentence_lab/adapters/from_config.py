"""``evaluate.py``'s config -> (text encoder, description).

It accepts:

* ``ckpt_path=<checkpoint or run dir>`` (or a list of them: vectors concatenated, combine-QT);
* an encoder config whose ``_target_`` is a trainable encoder (``encoders.is_trainable``): evaluated
  untrained (seeded random init);
* any other encoder config: an evaluation-only text encoder, built as it is: ``bow_glove``, ``length`` (the
  probing paper's Length baseline), ``nb_*_tfidf``, ``sentence_transformers`` / ``minilm``, ``precomputed``
  (a file of sentences and vectors), ``callable`` (a Python function ``module:function``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from sentence_lab.adapters.trained import load_checkpoint_encoder, load_concatenation, untrained_encoder
from sentence_lab.encoders.base import is_trainable

USER_PATH_KEYS = ("path", "sentences")  # files the user names, relative to where they ran the command


def build_text_encoder(cfg: DictConfig, sentences_fn: Callable[[], list[str]],
                       to_absolute: Callable[[str], str] = str) -> tuple[object, dict]:
    """(encoder, description) for an ``evaluate.py`` config. ``sentences_fn()`` gives the tasks' sentences (an
    untrained model's vocabulary); ``to_absolute`` maps user paths (Hydra changes the working directory)."""
    ckpt = cfg.get("ckpt_path")
    expansion = bool(cfg.get("vocab_expansion", True))
    if OmegaConf.is_list(ckpt) or isinstance(ckpt, (list, tuple)):
        return load_concatenation([to_absolute(p) for p in ckpt], expansion)
    if ckpt:
        return load_checkpoint_encoder(to_absolute(ckpt), expansion)
    target = cfg.encoder.get("_target_")
    if not target:
        raise ValueError("encoder config has no _target_: pick one of conf/encoder/*.yaml, e.g. encoder=bow_glove")
    if is_trainable(str(target)):
        return untrained_encoder(cfg.encoder, cfg.tokenizer, sentences_fn(), int(cfg.seed))
    kwargs = cast(dict[str, Any], OmegaConf.to_container(cfg.encoder, resolve=True))  # a mapping config: a dict
    for key in USER_PATH_KEYS:
        if kwargs.get(key):
            kwargs[key] = to_absolute(kwargs[key])
    if str(kwargs.get("function", "")).split(":")[0].endswith(".py"):
        module, _, attr = kwargs["function"].rpartition(":")
        kwargs["function"] = f"{to_absolute(module)}:{attr}"
    encoder = instantiate(kwargs, _convert_="all")
    return encoder, {"source": "text encoder", **encoder.describe()}
