"""Files that others made (checkpoints, exports) are read as data: no pickle beyond tensors and plain values, and no
``_target_`` beyond the project's own classes. docs/trust.md says what is trusted and what is data.

``read_checkpoint`` loads with ``torch.load(weights_only=True)``: tensors, numbers, strings, lists, dicts. This
project's checkpoints have held only those since their first version (the random streams are saved as plain
values), so no type is added to torch's safe globals. A file that needs more is refused (``RefusedFile``) naming the
file and the type, before anything is built or written.

``check_saved_targets`` holds a model's saved settings (a checkpoint's ``hyper_parameters``, an export's
``sentence_lab.json``) to an allow-list, checked on the strings before anything is imported: the encoder is a
trainable encoder of ``sentence_lab.encoders``, the objective a module of ``sentence_lab.objectives``, the optimiser
one of ``torch.optim`` and the schedule one of ``sentence_lab.training.schedules``; a nested ``_target_`` only where
the project nests one (the multi-channel encoder's ``channels``, each an allowed encoder). What a user writes in
``conf/`` or on the command line is not checked: Hydra instantiates it as given.
"""
from __future__ import annotations

import importlib
import pickle
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from sentence_lab.encoders.base import SentenceEncoder
from sentence_lab.text.refused_files import RefusedFile

# The one place the project nests a _target_: the multi-channel encoder builds each channel from its config.
NESTING_ENCODER = "sentence_lab.encoders.multichannel.MultiChannelEncoder"
CHANNELS = "channels"


def _unsafe_global(err: BaseException) -> str:
    """The type torch's weights-only unpickler refused (``posix.system``, ``builtins.exec``, ...), from its message."""
    found = re.search(r"GLOBAL ([\w.]+)", str(err)) or re.search(r"Unsupported global: ([\w.]+)", str(err))
    return found.group(1) if found else "an object that is not a tensor or a plain value"


def read_checkpoint(path: str | Path, mmap: bool = False) -> dict[str, Any]:
    """A checkpoint's contents, loaded as data (``weights_only=True``, on the CPU); ``mmap``: tensors stay on disk
    until read. ``RefusedFile`` when the file needs any other type to load."""
    try:
        loaded = torch.load(str(path), map_location="cpu", weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as err:
        raise RefusedFile(f"{path}: refused: it holds {_unsafe_global(err)}, which is code, not data (checkpoints "
                          "are read as tensors and plain values only, docs/trust.md): use a checkpoint written by "
                          "train.py, or ask its sender for one") from None
    if not isinstance(loaded, dict):
        raise RefusedFile(f"{path}: not a checkpoint (it holds a {type(loaded).__name__}, not a dict of tensors and "
                          "settings): pass a .ckpt written by train.py")
    return loaded


# ---- the allow-list of classes a saved setting may name ----------------------------------------------------------
def _defined_in(package: str, target: str, base: type | None) -> bool:
    """Whether ``target`` is ``<package>.<module>[.<module>...].<Name>``, a name defined in that module of the project
    (and a subclass of ``base``, when given). The string is checked before the module is imported."""
    if not re.fullmatch(rf"{re.escape(package)}(\.[a-z_][a-z0-9_]*)+\.[A-Za-z_][A-Za-z0-9_]*", target):
        return False
    module_name, _, name = target.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return False
    found = getattr(module, name, None)
    if getattr(found, "__module__", None) != module_name:  # defined there, not imported into it
        return False
    return base is None or (isinstance(found, type) and issubclass(found, base))


def _torch_optimizer(target: str) -> bool:
    if not re.fullmatch(r"torch\.optim\.[A-Z][A-Za-z0-9_]*", target):
        return False
    found = getattr(torch.optim, target.rsplit(".", 1)[1], None)
    return isinstance(found, type) and issubclass(found, torch.optim.Optimizer)


ALLOWED: dict[str, Callable[[str], bool]] = {
    "encoder": lambda t: _defined_in("sentence_lab.encoders", t, SentenceEncoder),
    "objective": lambda t: _defined_in("sentence_lab.objectives", t, nn.Module),
    "optimizer": _torch_optimizer,
    "scheduler": lambda t: t.startswith("sentence_lab.training.schedules.") and
    _defined_in("sentence_lab.training", t, None),
}
WHAT = {"encoder": "a trainable encoder of sentence_lab.encoders", "objective": "a class of sentence_lab.objectives",
        "optimizer": "an optimiser of torch.optim", "scheduler": "a schedule of sentence_lab.training.schedules"}


def _targets(node: Any, where: str) -> list[tuple[str, Any]]:
    """Every ``(place, _target_)`` in ``node``, places written as dotted keys."""
    found: list[tuple[str, Any]] = []
    if isinstance(node, dict):
        if "_target_" in node:
            found.append((where, node["_target_"]))
        for key, value in node.items():
            found += _targets(value, f"{where}.{key}")
    elif isinstance(node, (list, tuple)):
        for i, value in enumerate(node):
            found += _targets(value, f"{where}.{i}")
    return found


def _channel_places(encoder: Any, where: str) -> set[str]:
    """The places under a multi-channel encoder's config where a channel's ``_target_`` may sit."""
    if not isinstance(encoder, dict) or encoder.get("_target_") != NESTING_ENCODER:
        return set()
    channels = encoder.get(CHANNELS)
    named = channels.items() if isinstance(channels, dict) else \
        enumerate(channels) if isinstance(channels, list) else []
    places = set()
    for key, channel in named:
        place = f"{where}.{CHANNELS}.{key}"
        places.add(place)
        places |= _channel_places(channel, place)
    return places


def check_saved_targets(settings: dict[str, Any], source: str) -> None:
    """``RefusedFile`` (one line naming ``source``, the place and the name) unless every ``_target_`` in
    ``settings`` is on the allow-list for its place (see the module); nothing is imported before its name passes."""
    encoder_places = {"encoder"} | _channel_places(settings.get("encoder"), "encoder")
    for place, target in _targets(settings, ""):
        place = place.lstrip(".")
        group = "encoder" if place in encoder_places else place
        rule = ALLOWED.get(group)
        allowed = isinstance(target, str) and rule is not None and rule(target)
        if not allowed:
            wanted = f"it must name {WHAT[group]}" if group in WHAT else "the project nests no _target_ there"
            raise RefusedFile(f"{source}: refused: its saved setting {place}._target_={target!r} is not allowed "
                              f"({wanted}; a received file may name only the project's own classes, docs/trust.md): "
                              "use a checkpoint or export written by this project")
