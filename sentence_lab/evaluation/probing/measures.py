"""What a probing task's accuracy does not say, measured beside it when the protocol asks
(``.controls``, ``.mdl``): the control task's accuracy and the selectivity (:mod:`.controls`), and the online
codelength of the labels (:mod:`.mdl`).

Both use the probe the task chose on dev (its shape and L2 value), as Hewitt & Liang compare a probe's task and
control accuracy at fixed settings, and as Voita & Titov fix the probe of every block. The vectors are the task's
own, from the embedding cache: nothing is encoded again."""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from sentence_lab.evaluation.probing.controls import control_task
from sentence_lab.evaluation.probing.mdl import online_codelength
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.regimes import split
from sentence_lab.tasks.base import TaskData

Embed = Callable[[list[str]], np.ndarray]


def applies(spec, params: ProtocolParams) -> bool:
    """Controls and MDL are for the probing tasks (single sentences, train/dev/test), scored on their test split."""
    return (params.controls or params.mdl) and spec.family == "probing" and spec.regime == "split" \
        and not params.dev_only and params.backend == "pytorch"


def chosen_probe(params: ProtocolParams, probe: dict) -> ProtocolParams:
    """The protocol narrowed to the one probe a task chose (``probe`` of its result): its L2 value, and its hidden
    size and dropout when it is an MLP."""
    if "l2" not in probe:
        return params
    fixed: dict[str, Any] = {"l2_grid": (float(probe["l2"]),)}
    if probe.get("type") == "mlp":
        fixed.update(nhid=int(probe["nhid"]), dropout=float(probe["dropout"]), nhid_grid=None, dropout_grid=None)
    return dataclasses.replace(params, **fixed)


def measure(spec, data: TaskData, embed: Embed, params: ProtocolParams, result: dict) -> dict:
    """The keys to add to a probing task's result: ``control`` and ``selectivity`` (percentage points), ``mdl``, and
    what each cost (``control_seconds``, ``mdl_seconds``)."""
    out: dict = {}
    params = chosen_probe(params, result.get("probe") or {})
    if params.controls:
        started = time.perf_counter()
        task = control_task(data, params.control_function)
        control = split.run(spec, task, embed, params)
        test_labels = task.splits["test"].y
        out["control"] = {"function": params.control_function, "acc": control["acc"], "devacc": control["devacc"],
                          "majority": round(100 * float(np.bincount(test_labels).max()) / len(test_labels), 2),
                          "probe": control.get("probe")}
        out["selectivity"] = round(float(result["acc"]) - float(control["acc"]), 2)
        out["control_seconds"] = round(time.perf_counter() - started, 3)
    if params.mdl:
        started = time.perf_counter()
        train, dev = data.splits["train"], data.splits["dev"]
        out["mdl"] = online_codelength(embed(train.a), train.y, embed(dev.a), dev.y, params, data.classes)
        out["mdl_seconds"] = round(time.perf_counter() - started, 3)
    return out
