"""Each evaluation's layer geometry of a model in training: every layer's linear CKA against epoch 0 and against the
previous evaluation, and the alignment and uniformity of its sentence vectors, all on one fixed sentence sample.

The sample: ``sample_size`` distinct sentences of the suite's tasks drawn with ``seed`` (their SHA-256 recorded, so
that runs can be compared on the same sentences), and the STS-B development pairs of gold score >= ``min_gold`` as
the positive pairs of alignment. One ``encode_layers`` pass over both a measurement. The layers' vectors of epoch 0
and of the latest evaluation are kept in ``<folder>/epoch_NNN.npz`` (no pickles), so that a resumed run compares with
the same epoch 0, and ``report.py`` compares seeds on them.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sentence_lab.evaluation.encoders.text_encoders import EncodesLayers
from sentence_lab.evaluation.geometry.alignment import alignment, uniformity
from sentence_lab.evaluation.geometry.cka import linear_cka
from sentence_lab.evaluation.runner import LoadedTask, load_named_tasks
from sentence_lab.tasks.base import TaskData

PAIRS_SOURCE = "STSBenchmark dev"


@dataclass(frozen=True)
class GeometrySample:
    """The sentences every layer is measured on, and the positive pairs of alignment (empty: no STS-B data)."""

    sentences: list[str]
    pairs: list[tuple[str, str]]
    seed: int
    min_gold: float

    @property
    def sha256(self) -> str:
        return hashlib.sha256(json.dumps(self.sentences).encode()).hexdigest()

    def describe(self) -> dict[str, Any]:
        return {"size": len(self.sentences), "seed": self.seed, "sha256": self.sha256,
                "positive_pairs": len(self.pairs), "pairs_source": f"{PAIRS_SOURCE}, gold >= {self.min_gold:g}"}


def draw_sample(sentences: Sequence[str], size: int, seed: int, stsb: TaskData | None,
                min_gold: float = 4.0) -> GeometrySample:
    """``size`` distinct ``sentences`` (all of them when fewer) drawn with ``seed``, in the order given; the dev pairs
    of ``stsb`` (STSBenchmark's data) whose gold score is at least ``min_gold``."""
    distinct = list(dict.fromkeys(sentences))
    if size < 2:
        raise ValueError(f"geometry.sample_size={size}: uniformity needs at least two sentences (e.g. 2000)")
    if len(distinct) > size:
        keep = np.sort(np.random.default_rng(seed).choice(len(distinct), size=size, replace=False))
        distinct = [distinct[i] for i in keep]
    pairs: list[tuple[str, str]] = []
    if stsb is not None and "dev" in stsb.splits:
        dev = stsb.splits["dev"]
        pairs = [(a, b) for a, b, gold in zip(dev.a, dev.second, dev.y, strict=True) if float(gold) >= min_gold]
    return GeometrySample(distinct, pairs, seed, min_gold)


def stsb_data(tasks: Sequence[LoadedTask], data_dir: Path | str) -> TaskData | None:
    """STS-B's data: the suite's own when it has STSBenchmark (or its cosine form) loaded, else read from
    ``data_dir``; None when the data root lacks it."""
    for task in tasks:
        if task.spec.name in ("STSBenchmark", "STSBenchmarkCosine") and task.data is not None:
            return task.data
    (loaded,) = load_named_tasks(["STSBenchmark"], data_dir)
    return loaded.data


def _write_npz(path: Path, layers: Sequence[np.ndarray]) -> None:
    partial = path.with_name(path.name + ".partial.npz")
    arrays: dict[str, Any] = {f"layer_{k}": layer.astype(np.float32) for k, layer in enumerate(layers)}
    np.savez(partial, **arrays)
    os.replace(partial, path)


def read_layers(path: Path) -> list[np.ndarray]:
    """The layers' vectors of one evaluation, bottom first (``allow_pickle=False``: a planted object array fails)."""
    with np.load(path, allow_pickle=False) as saved:
        return [saved[f"layer_{k}"] for k in range(len(saved.files))]


class LayerGeometry:
    """Measures ``sample`` on a model each evaluation; ``folder`` keeps epoch 0's and the latest layers."""

    def __init__(self, sample: GeometrySample, folder: Path) -> None:
        self.sample = sample
        self.folder = Path(folder)

    def _file(self, epoch: int) -> Path:
        return self.folder / f"epoch_{epoch:03d}.npz"

    def _previous(self, epoch: int) -> int | None:
        earlier = [int(p.stem.split("_")[1]) for p in self.folder.glob("epoch_*.npz") if not p.stem.endswith("partial")]
        earlier = [e for e in earlier if e < epoch]
        return max(earlier) if earlier else None

    def measure(self, encoder: EncodesLayers, epoch: int) -> dict[str, Any]:
        """The epoch JSON's ``geometry`` section: ``cka.vs_epoch0`` / ``cka.vs_previous`` (layer -> CKA; absent for
        epoch 0 itself), ``alignment`` (null without STS-B pairs), ``uniformity``, ``seconds``."""
        started = time.perf_counter()
        n = len(self.sample.sentences)
        pair_sentences = [s for pair in self.sample.pairs for s in pair]
        layers = encoder.encode_layers(self.sample.sentences + pair_sentences)
        sample_layers = [layer[:n] for layer in layers]
        top = layers[-1] if getattr(encoder, "layers_end_with_output", True) else None
        out: dict[str, Any] = {"sample": self.sample.describe(), "layers": len(layers), "cka": {}}
        self.folder.mkdir(parents=True, exist_ok=True)
        previous = self._previous(epoch)
        references = {"vs_epoch0": 0 if epoch > 0 and self._file(0).exists() else None, "vs_previous": previous}
        for name, reference in references.items():
            if reference is None:
                continue
            then = read_layers(self._file(reference))
            if len(then) != len(sample_layers):
                raise ValueError(f"epoch {reference}'s geometry has {len(then)} layers, this model {len(layers)}: "
                                 f"remove {self.folder} to measure anew")
            out["cka"][name] = {str(k): linear_cka(a, b) for k, (a, b) in enumerate(zip(then, sample_layers))}
            out["cka"][f"{name}_epoch"] = reference
        if top is not None:
            out["uniformity"] = uniformity(top[:n])
            out["alignment"] = alignment(top[n::2], top[n + 1::2]) if self.sample.pairs else None
        _write_npz(self._file(epoch), sample_layers)
        if previous not in (None, 0):  # epoch 0 and the latest are kept
            self._file(previous).unlink(missing_ok=True)
        out["seconds"] = round(time.perf_counter() - started, 3)
        return out


def geometry_metrics(section: dict[str, Any] | None) -> dict[str, float]:
    """The logged curves of a ``geometry`` section: ``cka/layer_<k>/vs_epoch0``, ``cka/layer_<k>/vs_previous``,
    ``geometry/alignment``, ``geometry/uniformity`` (step = epoch)."""
    if not section:
        return {}
    out = {f"cka/layer_{k}/{name}": float(v) for name in ("vs_epoch0", "vs_previous")
           for k, v in (section.get("cka", {}).get(name) or {}).items() if v is not None and np.isfinite(v)}
    for name in ("alignment", "uniformity"):
        value = section.get(name)
        if isinstance(value, (int, float)) and np.isfinite(value):
            out[f"geometry/{name}"] = float(value)
    return out
