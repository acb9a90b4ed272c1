"""What an evaluation suite is asked to run, read from a config once: ``evaluate.py``'s top-level keys and the
per-epoch callback's (``conf/callbacks/eval_suite/*.yaml``) are the same names, and the ``evaluation`` group (the
classifier protocol, ``encode_batch_size``, ``layers``) is the same group in both.

    settings = SuiteSettings.from_config(cfg, cfg.evaluation)      # the task names resolved, a typo refused
    suite = EvaluationSuite.from_settings(settings, data_dir)      # sentence_lab.evaluation.suite

Each setting is normalised here and nowhere else; the suite takes them as they are.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from sentence_lab.evaluation.protocol import PROTOTYPE, ProtocolParams
from sentence_lab.evaluation.runner import params_from_config
from sentence_lab.tasks.registry import TASKS, resolve_tasks

# The keys a config gives the suite besides its protocol group.
CONFIG_KEYS = ("tasks", "probing", "sides", "side_probing", "retrieval_held_out", "retrieval_path")


@dataclasses.dataclass(frozen=True)
class SuiteSettings:
    """The suite's settings, each in its one form.

    tasks: task names, resolved from names and groups (``sentence_lab.tasks.resolve_tasks``).
    params: the classifier protocol. probing: where the probing tasks come from (auto, senteval, xprobe, generated,
    generated:<dir>). encode_batch_size: sentences per ``encode`` call. layers: score every layer too.
    sides: ``auto``, ``none`` or a list of language codes. side_probing: where a side's probing tasks come from.
    retrieval_held_out, retrieval_path: the Tatoeba pairs the training data held out (None: 1,000 pairs of the data
    root's file); a path without a held-out count is not taken. amnesic: the probing tasks whose property is removed
    from the vectors before the other tasks are scored again (``evaluation.probing.amnesic``).
    """

    tasks: tuple[str, ...]
    params: ProtocolParams = PROTOTYPE
    probing: str = "auto"
    encode_batch_size: int = 128
    layers: bool = False
    sides: str | tuple[str, ...] = "auto"
    side_probing: str = "auto"
    retrieval_held_out: int | None = None
    retrieval_path: str | None = None
    amnesic: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], protocol: Mapping[str, Any] | None) -> SuiteSettings:
        """From a config's suite keys (``CONFIG_KEYS``; an absent one takes its default) and its ``evaluation``
        group. Raises ``UnknownTask`` for a task or group that does not exist, ``ValueError`` for a bad value,
        before any data is read."""
        protocol = dict(protocol or {})
        held_out = cfg.get("retrieval_held_out")
        path = cfg.get("retrieval_path")
        return cls(tasks=tuple(resolve_tasks(_names(cfg.get("tasks", "probing")))),
                   params=params_from_config(protocol),
                   probing=str(cfg.get("probing") or "auto"),
                   encode_batch_size=int(protocol.get("encode_batch_size", 128)),
                   layers=bool(protocol.get("layers", False)),
                   sides=_sides(cfg.get("sides", "auto")),
                   side_probing=str(cfg.get("side_probing") or "auto"),
                   retrieval_held_out=None if held_out is None else int(held_out),
                   # the training file is the one to hold pairs out of only when the training data held some out
                   retrieval_path=str(path) if path is not None and held_out else None,
                   amnesic=_amnesic(protocol.get("amnesic") or ()))


def _amnesic(value: Any) -> tuple[str, ...]:
    """``evaluation.amnesic``: probing task names (a string or a sequence); any other task refused in one line."""
    names = resolve_tasks(_names(value)) if value else []
    wrong = [name for name in names if TASKS[name].family != "probing"]
    if wrong:
        raise ValueError(f"evaluation.amnesic={wrong}: amnesic probing removes a probing task's property; name "
                         "probing tasks (Tense, SubjNumber, Length, ...)")
    return tuple(names)


def _names(value: Any) -> str | list[str]:
    """A task list as a config gives it: one string (``all``, ``MR,STS14``) or a sequence of names."""
    return value if isinstance(value, str) else [str(name) for name in value]


def _sides(value: Any) -> str | tuple[str, ...]:
    """``sides``: auto, none (also null or false), one code or a sequence of codes."""
    if value is None or value is False:
        return "none"
    if isinstance(value, str):
        return value
    if isinstance(value, Iterable):
        return tuple(str(code) for code in value)
    return str(value)

