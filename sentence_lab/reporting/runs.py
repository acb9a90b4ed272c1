"""The runs below a directory as the report reads them: each run's settings, its per-epoch evaluation scores,
its training loss and its test scores (``Run``), and reference results files shown beside them."""
from __future__ import annotations

import csv
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from sentence_lab.evaluation.results import probe_details, read_results
from sentence_lab.tasks.registry import TASKS, get_path

log = logging.getLogger(__name__)

SETTINGS = {  # column -> dotted key of the composed config
    "seed": "seed", "batch_size": "data.batch_size", "lr": "model.optimizer.lr", "max_epochs": "trainer.max_epochs",
    "tags": "tags"}


@dataclass
class Run:
    """One training run's record."""

    path: Path
    name: str
    choices: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    curves: dict[str, dict[int, float]] = field(default_factory=dict)  # task -> epoch -> main score
    families: dict[str, str] = field(default_factory=dict)  # task -> probing | transfer | ...
    loss: list[tuple[int, float]] = field(default_factory=list)
    tests: dict[str, float | None] = field(default_factory=dict)
    probes: dict[str, str] = field(default_factory=dict)  # task -> probe details of its last epoch
    # selectivity|mdl_kbits -> task -> epoch -> value
    measures: dict[str, dict[str, dict[int, float]]] = field(default_factory=dict)
    layers: dict[str, dict[int, dict[int, float]]] = field(default_factory=dict)  # task -> layer -> epoch -> score
    overrides: list[str] = field(default_factory=list)  # the command line's overrides (.hydra/overrides.yaml)
    last_path: Path | None = None  # the results file of the last epoch evaluated
    reference: bool = False  # a results file of a fixed encoder (bow_glove, minilm), not a training run
    last_results: Mapping[str, Any] = field(default_factory=dict)  # the results document of the last epoch evaluated
    preset: str | None = None  # the per-epoch suite's preset (callbacks/eval_suite=curves): not SentEval's protocol
    # a two-language model's other sides (results' sides.<lang>): language -> task -> epoch -> main score
    sides: dict[str, dict[str, dict[int, float]]] = field(default_factory=dict)
    side_baselines: dict[str, dict[str, float]] = field(default_factory=dict)  # language -> baseline -> margin error
    # each evaluation's layer geometry (results' geometry): layer -> epoch -> linear CKA to epoch 0, and
    # alignment|uniformity -> epoch -> value
    cka: dict[int, dict[int, float]] = field(default_factory=dict)
    geometry: dict[str, dict[int, float]] = field(default_factory=dict)

    def final(self, task: str) -> float | None:
        scores = self.curves.get(task)
        return scores[max(scores)] if scores else None

    def best(self, task: str) -> tuple[float, int] | None:
        scores = self.curves.get(task)
        if not scores:
            return None
        epoch = max(scores, key=lambda e: (scores[e], -e))
        return scores[epoch], epoch


def read_csv_scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar a run logged with ``logger=csv`` (``<run>/csv/metrics.csv``): tag -> [(step, value)], by step."""
    points: dict[str, dict[int, float]] = {}
    for path in sorted(run_dir.glob("csv/**/metrics.csv")):
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                step = int(float(row.get("step") or 0))
                for tag, value in row.items():
                    if tag not in ("step", "epoch") and value not in (None, ""):
                        points.setdefault(tag, {})[step] = float(value)
    return {tag: sorted(values.items()) for tag, values in points.items()}


def read_scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar a run logged: from TensorBoard (``<run>/tensorboard``), else from ``logger=csv``'s
    ``metrics.csv``: tag -> [(step, value)], by step."""
    events = sorted(run_dir.glob("tensorboard/**/events.out.tfevents.*"))
    if not events:
        return read_csv_scalars(run_dir)
    points: dict[str, dict[int, float]] = {}
    for path in events:
        acc = EventAccumulator(str(path), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            points.setdefault(tag, {}).update({e.step: e.value for e in acc.Scalars(tag)})
    return {tag: sorted(values.items()) for tag, values in points.items()}


def _read_config(run_dir: Path) -> dict | None:
    try:
        return yaml.safe_load((run_dir / ".hydra" / "config.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None


def _read_overrides(run_dir: Path) -> list[str]:
    try:
        overrides = yaml.safe_load((run_dir / ".hydra" / "overrides.yaml").read_text()) or []
    except (OSError, yaml.YAMLError):
        return []
    return [str(o) for o in overrides] if isinstance(overrides, list) else []


def is_training_run(cfg: dict | None) -> bool:
    """A ``train.py`` run (not, e.g., the folder of an ``evaluate.py`` call): its config has an objective."""
    return cfg is not None and "objective" in cfg and "trainer" in cfg


def load_run(run_dir: Path, root: Path, cfg: dict | None = None) -> Run:
    cfg = (_read_config(run_dir) or {}) if cfg is None else cfg
    hydra_file = run_dir / ".hydra" / "hydra.yaml"
    choices = {}
    if hydra_file.is_file():
        choices = (yaml.safe_load(hydra_file.read_text()) or {}).get("hydra", {}).get("runtime", {}).get("choices", {})
    name = str(run_dir.relative_to(root)) if run_dir != root else run_dir.name
    run = Run(run_dir, name, {k: choices.get(k) for k in ("objective", "encoder", "data", "experiment")},
              {column: get_path(cfg, key) for column, key in SETTINGS.items()}, overrides=_read_overrides(run_dir))
    for path in sorted((run_dir / "eval").glob("epoch_*.json")):
        try:
            doc = read_results(path)
        except ValueError as err:
            log.warning("%s (a run killed while writing it?): skipped", err)
            continue
        epoch = int(doc.get("epoch", path.stem.split("_")[-1]))
        for task, result in doc.get("results", {}).items():
            add_result(run, task, result, epoch)
        for language, side in (doc.get("sides") or {}).items():
            add_side(run, language, side, epoch)
        add_geometry(run, doc.get("geometry"), epoch)
        run.last_results, run.last_path = doc, path
        preset = doc.get("preset")
        if isinstance(preset, dict) and preset.get("name"):
            run.preset = str(preset["name"])
    run.loss = read_scalars(run_dir).get("train/loss_step", [])
    tests = run_dir / "test_results.json"
    if tests.is_file():
        try:
            run.tests = {k: r["main_score"] for k, r in read_results(tests)["results"].items()}
        except ValueError as err:
            log.warning("%s: skipped", err)
    return run


def load_reference(path: Path) -> Run:
    """An ``evaluate.py`` results file as a table row beside the runs (e.g. bow_glove, all-MiniLM-L6-v2)."""
    doc = read_results(path)
    name = doc.get("encoder", {}).get("name") or Path(path).stem
    run = Run(Path(path), f"reference: {name}", {"objective": "-", "encoder": name, "data": "-"}, reference=True)
    for task, result in doc.get("results", {}).items():
        add_result(run, task, result, 0)
    run.last_results, run.last_path = doc, Path(path)
    return run


def add_result(run: Run, task: str, result: Mapping[str, Any], epoch: int) -> None:
    """One task's result at one epoch: its main score, its probe, its layers' scores, and selectivity and codelength
    when measured."""
    if result.get("main_score") is None:
        return
    run.curves.setdefault(task, {})[epoch] = float(result["main_score"])
    spec = TASKS.get(task)
    run.families[task] = spec.family if spec else "other"
    if (details := probe_details(result)) and epoch >= max(run.curves[task]):
        run.probes[task] = details
    for layer, scored in (result.get("layers") or {}).items():  # schema 2, layers=true
        if isinstance(scored, dict) and isinstance(scored.get("main_score"), (int, float)):
            run.layers.setdefault(task, {}).setdefault(int(layer), {})[epoch] = float(scored["main_score"])
    if isinstance(result.get("selectivity"), (int, float)):
        run.measures.setdefault("selectivity", {}).setdefault(task, {})[epoch] = float(result["selectivity"])
    if isinstance(result.get("mdl"), dict) and isinstance(result["mdl"].get("online_kbits"), (int, float)):
        run.measures.setdefault("mdl_kbits", {}).setdefault(task, {})[epoch] = float(result["mdl"]["online_kbits"])


def add_geometry(run: Run, section: object, epoch: int) -> None:
    """An evaluation's ``geometry`` section into ``run.cka`` (epoch 0 is 1 on every layer by definition) and
    ``run.geometry``."""
    if not isinstance(section, Mapping) or "layers" not in section:
        return
    vs_epoch0 = section.get("cka", {}).get("vs_epoch0") or ({} if epoch else dict.fromkeys(
        map(str, range(int(section["layers"]))), 1.0))
    for k, value in vs_epoch0.items():
        if isinstance(value, (int, float)):
            run.cka.setdefault(int(k), {})[epoch] = float(value)
    for name in ("alignment", "uniformity"):
        if isinstance(section.get(name), (int, float)):
            run.geometry.setdefault(name, {})[epoch] = float(section[name])


def add_side(run: Run, language: str, side: Mapping, epoch: int) -> None:
    """One epoch of a second language's results: each task's main score, and retrieval's baselines (the mean of the
    margin's two error rates, as the task's own main score)."""
    for task, result in (side.get("results") or {}).items():
        if isinstance(result, dict) and isinstance(result.get("main_score"), (int, float)):
            run.sides.setdefault(language, {}).setdefault(task, {})[epoch] = float(result["main_score"])
        for name, rates in ((result or {}).get("baselines") or {}).items():
            margin = list((rates.get("margin") or {}).values())
            if margin:
                run.side_baselines.setdefault(language, {})[name] = sum(margin) / len(margin)


def find_runs(root: Path) -> list[Run]:
    """Every training run below ``root`` (``root`` itself included), in path order."""
    dirs = sorted({p.parent.parent for p in root.glob("**/.hydra/config.yaml")})
    configs = {d: _read_config(d) for d in dirs}
    return [load_run(d, root, cfg) for d, cfg in configs.items() if is_training_run(cfg)]
