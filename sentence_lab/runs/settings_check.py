"""Settings checked before any data is read: each value against the type its class's constructor declares,
and the sizes and rates that must be positive. One line names the setting, what it got and what it needs."""
from __future__ import annotations

import inspect
import types
import typing
from typing import Any, cast

from hydra.utils import get_class
from omegaconf import DictConfig, OmegaConf

from sentence_lab.checkpoints.legacy import namespaced_targets
from sentence_lab.checkpoints.received import read_checkpoint
from sentence_lab.text.config_values import plain

# Groups whose ``_target_`` constructor receives the group's keys as keyword arguments.
CHECKED_GROUPS = ("data", "encoder", "objective", "trainer", "model.optimizer")
# Settings that are counts or sizes: at least 1 when set.
POSITIVE_INTS = ("batch_size", "embed_dim", "hidden_dim", "num_layers", "vocab_size", "max_tokens", "min_tokens",
                 "context_size", "decoder_vocab_size", "n_classes", "devices", "num_nodes")
# Settings that are rates: above 0 when set.
POSITIVE_FLOATS = ("lr", "temperature")
_SIMPLE = (bool, int, float, str)


class SettingsError(ValueError):
    """A setting has the wrong type or is out of range."""


def _accepts(hint: Any, value: Any) -> bool | None:
    """Whether ``value`` fits ``hint``; None when the hint is not one this check understands."""
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if hint in _SIMPLE:
        if hint is bool:
            return isinstance(value, bool)
        if hint is int:
            return isinstance(value, int) and not isinstance(value, bool)
        if hint is float:
            return isinstance(value, (int, float)) and not isinstance(value, bool)
        return isinstance(value, str)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        verdicts = [_accepts(arg, value) for arg in typing.get_args(hint)]
        if any(v is True for v in verdicts):
            return True
        return None if any(v is None for v in verdicts) else False
    return None


_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string", type(None): "null"}


def _describe(hint: Any) -> str:
    """``Optional[int]`` -> ``an integer or null``."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_describe(arg) for arg in typing.get_args(hint))
    return _NAMES.get(hint, str(hint).replace("typing.", ""))


def _hints(target: str) -> dict[str, Any]:
    """The constructor's parameter hints that evaluate (one by one: a hint naming a type imported only for
    type checkers is left out, not the others)."""
    init = cast("type[Any]", get_class(target)).__init__
    namespace = {**vars(typing), **getattr(inspect.getmodule(init), "__dict__", {})}
    hints = {}
    for name, annotation in getattr(init, "__annotations__", {}).items():
        if name == "return":
            continue
        try:
            hints[name] = eval(annotation, namespace) if isinstance(annotation, str) else annotation  # noqa: S307
        except Exception:  # noqa: BLE001 - an annotation this module cannot evaluate is not checked
            continue
    return hints


def check_group(cfg: DictConfig, group: str) -> None:
    """Every plain value of ``cfg.<group>`` against its constructor's type hints, then the positive settings."""
    node = OmegaConf.select(cfg, group)
    if not isinstance(node, DictConfig) or "_target_" not in node:
        return
    settings: dict[str, Any] = plain(node)
    values = {k: v for k, v in settings.items() if k != "_target_"}
    hints = _hints(str(node._target_))
    for key, value in values.items():
        if isinstance(value, (dict, list)) or key not in hints:
            continue
        if _accepts(hints[key], value) is False:
            raise SettingsError(f"{group}.{key}={value!r} is a {type(value).__name__}: it must be "
                                f"{_describe(hints[key])} (e.g. python train.py {group}.{key}=<value>)")
    for key in POSITIVE_INTS:
        value = values.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value < 1:
            raise SettingsError(f"{group}.{key}={value}: it must be at least 1")
    for key in POSITIVE_FLOATS:
        value = values.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
            raise SettingsError(f"{group}.{key}={value}: it must be above 0")


def check_settings(cfg: DictConfig) -> None:
    """Check the training settings before any data is read (``SettingsError``, one line, on the first problem)."""
    seed = cfg.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise SettingsError(f"seed={seed!r}: it must be an integer")
    for group in CHECKED_GROUPS:
        check_group(cfg, group)
    every = OmegaConf.select(cfg, "callbacks.last_checkpoint.every_n_train_steps")
    if every is not None and (not isinstance(every, int) or isinstance(every, bool) or every < 1):
        raise SettingsError(f"callbacks.last_checkpoint.every_n_train_steps={every!r}: an integer of at least 1, "
                            "or null")


# What a resumed run must share with its checkpoint: the model's own settings. The others (the budget, the epochs or
# steps, the logger, the callbacks, the data loader's workers) may change on resume: docs/runs.md lists them.
RESUME_FIXED = ("encoder", "objective")


def _flat(node: Any, prefix: str) -> dict[str, Any]:
    if isinstance(node, dict):
        return {k: v for key, value in node.items() for k, v in _flat(value, f"{prefix}.{key}").items()}
    return {prefix: node}


def check_resume_settings(cfg: DictConfig) -> None:
    """``ckpt_path`` (a resumed run) must have been trained with this run's encoder and objective settings:
    ``SettingsError`` naming every key that differs, before anything is built or written."""
    ckpt = cfg.get("ckpt_path")
    if not ckpt:
        return
    # memory-mapped: only the pickled settings are read, not the weights (Lightning loads those once, later)
    saved = read_checkpoint(str(ckpt), mmap=True).get("hyper_parameters") or {}
    differ = []
    for group in RESUME_FIXED:
        if group not in saved or cfg.get(group) is None:
            continue
        theirs = _flat(namespaced_targets(plain(saved[group])), group)
        ours = _flat(plain(cfg[group]), group)
        for key in sorted(set(theirs) & set(ours)):  # a key added to the configs since keeps its default
            if theirs[key] != ours[key]:
                differ.append(f"{key}={ours.get(key)!r} (the checkpoint has {theirs.get(key)!r})")
    if differ:
        raise SettingsError(f"ckpt_path={ckpt} was trained with other settings: {'; '.join(differ)}. Resume with the "
                            "checkpoint's settings, or start a new run without ckpt_path/resume")
