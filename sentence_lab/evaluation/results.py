"""The one results schema, and results on disk: JSON and a Markdown table of main scores, both written atomically.

Every results file of the project is a :class:`ResultsDocument`: ``evaluate.py``'s ``results.json``, the per-epoch
suite's ``eval/epoch_NNN.json``, a training run's ``test_results.json``. Each task's entry is a
:class:`TaskResult`: SentEval's keys for the task (``acc``, ``devacc``, ``pearson``, ``all``, ...) plus the main
score, its metric, size and timings. ``kind`` says which writer made the file.

Schema 2 (schema 1 files read as they are: they have none of this) adds what sits beside the encoder's output, so
that ``results[TASK]`` stays the output's score for every reader (``compare``, pruning, TensorBoard's tags):

* ``results[TASK]["layers"]``: the task scored on each layer (``{"0": LayerResult, "1": ...}``, layer 0 the pooled
  word vectors), when the suite ran with ``layers=true``;
* ``sides[SIDE]``: another side of a model (a bilingual model's second-language encoder), each a
  :class:`SideResults` with its own ``results``/``skipped``/``errors`` of the same shape (layers included);
* ``items_file``: the per-item predictions beside the JSON (for paired tests), by name relative to it.

:func:`read_results` reads any of them (and the flat ``test_results.json`` of runs made before the schema), refusing
anything else in one line; ``sentence_lab.reporting.compare`` and ``sentence_lab.reporting.report`` read through it.
"""
from __future__ import annotations

import dataclasses
import importlib.metadata as md
import json
import math
import platform
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, TypedDict, cast

import numpy as np
from filelock import FileLock

from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.home import HOME
from sentence_lab.text.files import atomic_write, atomic_write_text

SCHEMA_VERSION = 2
Kind = Literal["evaluate", "epoch", "test"]


class LayerResult(TypedDict, total=False):
    """One layer's entry of a task: the task's SentEval keys and main score on that layer's vectors."""

    main_score: float | None
    main_metric: str
    main_score_sd: float
    width: int  # the layer's vector width
    seconds: float  # its classifiers' time (the layers' one encoding pass is the task's layers_encode_seconds)
    output: bool  # true: the top layer is the encoder's output, its scores the task's own (not computed again)


class TaskResult(TypedDict, total=False):
    """One task's entry: SentEval's result keys for it, and what the suite adds."""

    main_score: float | None  # the task's headline number (accuracy %, or a correlation)
    main_metric: str  # the dotted key of the result it comes from, e.g. "acc", "all.spearman.mean"
    main_score_sd: float  # its sd over classifier seeds, when several were run
    n: int  # examples in all splits
    seconds: float
    encode_seconds: float
    classifier_seconds: float
    regime: str  # a key of sentence_lab.evaluation.regimes.REGIMES
    oov_rate: float  # share of the task's tokens the encoder maps to <unk>
    seeds: dict[str, dict[str, float]]
    sd: dict[str, float]
    layers: dict[str, LayerResult]  # layer index -> its scores (schema 2, layers=true)
    layers_seconds: float  # the layers' encoding pass and classifiers
    layers_encode_seconds: float
    layers_error: str  # why the layers were not scored (the task's own score stands)


class SideResults(TypedDict, total=False):
    """Another side of a model (schema 2): e.g. ``sides["fr"]``, a bilingual model's French encoder on French tasks."""

    encoder: dict[str, Any]  # that side's description (its language, ...)
    results: dict[str, TaskResult]
    skipped: dict[str, str]
    errors: dict[str, str]


class ResultsDocument(TypedDict, total=False):
    """A results file."""

    schema_version: int
    kind: Kind
    protocol: dict[str, Any]  # ProtocolParams as a dict, + standard, encode_batch_size, ...
    encoder: dict[str, Any]  # the encoder's description; "name" identifies it
    tasks: list[str]
    results: dict[str, TaskResult]
    skipped: dict[str, str]  # task -> why it did not run (missing data, time budget, dev-only)
    errors: dict[str, str]  # task -> its one-line failure
    data_dir: str
    probing_source: str
    versions: dict[str, str]
    git_revision: str | None
    epoch: int  # kind "epoch": epochs trained (0 = before training)
    layers: str  # present when every layer was scored: what results[TASK]["layers"] holds
    sides: dict[str, SideResults]  # the model's other sides, by name
    items_file: str  # the per-item predictions, beside this file
    checkpoint: str  # kind "test": the checkpoint scored


def git_revision(root: Path | None = None) -> str | None:
    """The checkout's commit, ``-dirty`` when tracked files differ from it; ``None`` outside a git checkout."""
    root = root or HOME
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if rev.returncode != 0:
        return None
    return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def library_versions() -> dict[str, str]:
    """Python's version and those of the libraries that change scores."""
    out = {"python": platform.python_version()}
    for pkg in ("torch", "numpy", "scipy", "scikit-learn", "hydra-core", "omegaconf", "lightning", "sacremoses"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def protocol_record(params: ProtocolParams, **extra: Any) -> dict[str, Any]:
    """The ``protocol`` header of a results file: the protocol parameters and what else shaped the scores."""
    return {"standard": "SentEval", **dataclasses.asdict(params), **extra}


def results_meta(kind: Kind, protocol: dict[str, Any], encoder: dict[str, Any], tasks: list[str],
                 **fields: Any) -> dict[str, Any]:
    """The header every writer puts above its results: schema, kind, protocol, encoder, tasks, ``fields``
    (``data_dir``, ``probing_source``, ``epoch``, ...), library versions and the git revision."""
    return {"schema_version": SCHEMA_VERSION, "kind": kind, "protocol": protocol, "encoder": encoder,
            "tasks": list(tasks), **fields, "versions": library_versions(), "git_revision": git_revision()}


def read_results(path: Path | str) -> ResultsDocument:
    """A results file of any writer, as a :class:`ResultsDocument`; one line naming the problem otherwise. A flat
    ``test_results.json`` (``{"test/<set>/acc": 0.81, "checkpoint": ...}``, runs before the schema) is read as
    kind ``test``."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a readable results file ({err})") from None
    if isinstance(doc, dict) and "results" not in doc and path.name == "test_results.json":
        doc = document_of_test_scores({k: v for k, v in doc.items() if isinstance(v, (int, float))},
                                      doc.get("checkpoint"))
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), dict):
        raise ValueError(f"{path}: no 'results' in it: give results.json files of evaluate.py, eval/epoch_NNN.json "
                         "or test_results.json")
    version = doc.get("schema_version", 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise ValueError(f"{path}: results schema {version!r}, newer than this checkout's {SCHEMA_VERSION}: read it "
                         "with the sentence_lab that wrote it (its versions.git_revision), or update this one")
    for task, result in doc["results"].items():
        if not isinstance(result, dict) or "main_score" not in result:
            raise ValueError(f"{path}: the result of {task} has no main_score: not a results file of this project")
    for section in ("skipped", "errors"):
        doc.setdefault(section, {})
    return cast(ResultsDocument, doc)  # checked above: the schema's version and every result's main_score


def document_of_test_scores(metrics: dict[str, float], checkpoint: str | None, **fields: Any) -> ResultsDocument:
    """A training run's test-set scores (``trainer.test``'s metrics, e.g. ``test/snli_test/acc``) as a
    results document of kind ``test``: one entry per metric."""
    results = {name: {"main_score": float(value), "main_metric": name.rsplit("/", 1)[-1]}
               for name, value in metrics.items()}
    doc = {"schema_version": SCHEMA_VERSION, "kind": "test", "checkpoint": checkpoint or "final weights",
           "results": results, "skipped": {}, "errors": {}, **fields}
    return cast(ResultsDocument, doc)


CORRELATION_METRICS = ("pearson", "spearman", "mean", "wmean")


def percent_score(result: dict | None) -> float | None:
    """A task's main score on one 0-100 scale: accuracies as they are, correlations x100 (so one mean covers the
    transfer and the similarity tasks, as the published tables do); None when the task has no score."""
    if result is None or result.get("main_score") is None:
        return None
    value = float(result["main_score"])
    correlation = str(result.get("main_metric", "")).split(".")[-1] in CORRELATION_METRICS
    return value * 100 if correlation and abs(value) <= 1.0 else value


def probe_label(result: Mapping[str, Any]) -> str | None:
    """A short name of the probe that scored a result and what it chose on dev: ``logistic``, ``MLP 100/0.1``
    (hidden units / dropout), ``logistic (scikit-learn)``; None when the result names none."""
    probe = result.get("probe")
    if not isinstance(probe, dict):
        return None
    if probe.get("type") == "mlp":
        return f"MLP {probe.get('nhid')}/{probe.get('dropout'):g}"
    return str(probe.get("type"))


def probe_details(result: Mapping[str, Any]) -> str | None:
    """The probe, and the controls and codelength a probing result carries: ``MLP 100/0.1, selectivity 31.2,
    MDL 14.3 kbits (compression 3.9)``."""
    parts = [label] if (label := probe_label(result)) else []
    if isinstance(result.get("selectivity"), (int, float)):
        parts.append(f"selectivity {result['selectivity']:.1f}")
    mdl = result.get("mdl")
    if isinstance(mdl, dict) and isinstance(mdl.get("online_kbits"), (int, float)):
        parts.append(f"MDL {mdl['online_kbits']:.1f} kbits (compression {mdl.get('compression', float('nan')):.2f})")
    return ", ".join(parts) or None


def to_jsonable(value):
    """numpy scalars/arrays to Python; NaN/inf to None (JSON has no NaN)."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return to_jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value


def _fmt(value) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) > 1.5 else f"{value:.4f}"
    return str(value)


def markdown_table(doc: Mapping[str, Any]) -> str:
    encoder = doc.get("encoder", {}).get("name", "?")
    protocol = doc.get("protocol", {}).get("name", "?")
    lines = [f"SentEval results: encoder `{encoder}`, protocol `{protocol}`", "", *_task_rows(doc)]
    for name, side in (doc.get("sides") or {}).items():
        language = (side.get("encoder") or {}).get("language", name)
        lines += ["", f"Side `{name}` (language {language})", "", *_task_rows(side)]
    return "\n".join(lines) + "\n"


def _task_rows(doc: Mapping[str, Any]) -> list[str]:
    """The Markdown table of one section's results, skipped tasks and errors."""
    lines = ["| task | main score | metric | extra | n | seconds (encode + classifier) |", "|---|---|---|---|---|---|"]
    for task, r in doc.get("results", {}).items():
        extra = ""
        if "f1" in r:
            extra = f"f1 {_fmt(r['f1'])}"
        elif "spearman" in r and not isinstance(r["spearman"], dict):
            extra = f"spearman {_fmt(r['spearman'])}"
        elif isinstance(r.get("all"), dict) and isinstance(r["all"].get("spearman"), dict):
            extra = f"spearman mean {_fmt(r['all']['spearman'].get('mean'))}"
        elif isinstance(r.get("error"), dict):  # translation retrieval: error rates, each direction
            extra = "; ".join(f"{score} " + " ".join(f"{d} {_fmt(v)}" for d, v in rates.items())
                              for score, rates in r["error"].items())
        secs = f"{r.get('seconds', 0):.1f} ({r.get('encode_seconds', 0):.1f} + {r.get('classifier_seconds', 0):.1f})"
        score = _fmt(r.get("main_score")) + (f" ± {_fmt(r['main_score_sd'])}" if "main_score_sd" in r else "")
        lines.append(f"| {task} | {score} | {r.get('main_metric', '')} | {extra} | "
                     f"{r.get('n', '')} | {secs} |")
    for task, message in doc.get("skipped", {}).items():
        lines.append(f"| {task} | skipped | | {message.split(':', 1)[-1].strip()[:80]} | | |")
    for task, message in doc.get("errors", {}).items():
        lines.append(f"| {task} | error | | {message[:80]} | | |")
    return lines


def items_path(results_file: Path | str) -> Path:
    """Where the per-item predictions of a results file go: ``results.json`` -> ``results.items.npz``,
    ``eval/epoch_003.json`` -> ``eval/epoch_003.items.npz``."""
    path = Path(results_file)
    return path.with_name(f"{path.stem}.items.npz")


def read_items(path: Path | str) -> dict[str, dict[str, np.ndarray]]:
    """A per-item file (``<results>.items.npz``, arrays named ``<task>/<column>``) as task -> column -> array; read
    as data (no pickled objects); one line naming the file when it cannot be read."""
    out: dict[str, dict[str, np.ndarray]] = {}
    try:
        with np.load(path, allow_pickle=False) as arrays:
            for name in arrays.files:
                task, _, column = name.partition("/")
                out.setdefault(task, {})[column] = arrays[name]
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: not a readable per-item file ({type(err).__name__}: {err}): run the evaluation "
                         "again to write it") from None
    return out


class SectionsWriter:
    """What both writers share: a document's ``results``/``skipped``/``errors`` set task by task, each change written
    (``flush``), and the tasks this writer produced (``claimed``)."""

    doc: dict
    claimed: set[str]

    def add_result(self, task: str, result: dict) -> None:
        self._set("results", task, result)

    def add_skipped(self, task: str, message: str) -> None:
        self._set("skipped", task, message)

    def add_error(self, task: str, message: str) -> None:
        self._set("errors", task, message)

    def _set(self, section: str, task: str, value: Any) -> None:
        self.claimed.add(task)
        self.doc[section][task] = value
        self.flush()

    def update(self, **fields) -> None:
        self.doc.update(fields)
        self.flush()

    def flush(self) -> None:
        raise NotImplementedError


class ResultsWriter(SectionsWriter):
    """Holds the results document and rewrites the JSON and Markdown files (each written whole, atomically) after
    every change; the tasks' per-item predictions (:meth:`add_items`) go to ``<name>.items.npz`` beside them, named
    in the JSON's ``items_file``.

    With ``merge_with_file``, each write happens under a lock beside the file (``.<name>.lock``) and first takes
    from the file what other writers put there since: every task this writer has not claimed (``claim``) or
    produced keeps the file's entry, so two ``evaluate.py`` runs of one encoder writing one ``results_file`` at
    once both keep their tasks."""

    def __init__(self, path: Path | str, meta: dict, merge_with_file: bool = False) -> None:
        self.path = Path(path)
        self.markdown_path = self.path.with_suffix(".md")
        self.lock_path = self.path.with_name(f".{self.path.name}.lock")
        self.doc: dict = {"results": {}, "skipped": {}, "errors": {}, **meta}
        self.merge_with_file = merge_with_file
        self.claimed: set[str] = set()
        self.items_path = items_path(self.path)
        self.items: dict[str, dict[str, np.ndarray]] = {}

    def claim(self, tasks: Iterable[str]) -> None:
        """Tasks this writer runs: their entries in the file are this writer's to replace."""
        self.claimed.update(tasks)

    def add_items(self, task: str, items: dict[str, np.ndarray]) -> None:
        """A task's per-item arrays (``ids``, ``gold``, ``pred``, ...; ``layer_<k>/pred`` per layer)."""
        self.items[task] = dict(items)
        self.doc["items_file"] = self.items_path.name
        self.claimed.add(task)

    def side(self, name: str, encoder: dict[str, Any]) -> SideWriter:
        """The writer of ``sides[name]`` (a fresh entry: a side is scored whole on every run)."""
        return SideWriter(self, name, encoder)

    def flush(self) -> None:
        if not self.merge_with_file:  # the one writer of its file (each write is whole, never interleaved)
            self._write()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(self.lock_path):
            self._take_others_from_file()
            self._write()

    def _write(self) -> None:
        if self.items:  # first: the JSON that names it is never ahead of it
            arrays = {f"{task}/{column}": array for task, columns in self.items.items()
                      for column, array in columns.items()}
            save = cast(Any, np.savez)  # numpy's stubs read ** as its keyword arguments
            atomic_write(self.items_path, lambda f: save(f, **arrays))
        atomic_write_text(self.path, json.dumps(to_jsonable(self.doc), indent=2) + "\n")
        atomic_write_text(self.markdown_path, markdown_table(self.doc))

    def _take_others_from_file(self) -> None:
        """The file's entries for the tasks this writer has not claimed (another writer's, or an earlier run's)."""
        try:
            disk = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return
        if compatibility_problem(disk, self.doc) is not None:
            return
        for section in SECTIONS:
            for task, value in (disk.get(section) or {}).items():
                if task not in self.claimed:
                    self.doc[section][task] = value
        self.take_items_from_file([t for t in disk.get("results") or {} if t not in self.claimed])

    def take_items_from_file(self, tasks: list[str]) -> None:
        """The items file's arrays of ``tasks`` (kept beside their results); an unreadable file gives none."""
        if not tasks or not self.items_path.is_file():
            return
        try:
            on_disk = read_items(self.items_path)
        except ValueError:
            return
        for task in tasks:
            if task in on_disk:
                self.items[task] = on_disk[task]
                self.doc["items_file"] = self.items_path.name


class SideWriter(SectionsWriter):
    """One side's section of a results document (``sides[NAME]``, a :class:`SideResults`) with the writer interface
    ``runner.run_tasks`` uses; every change is written through the document's :class:`ResultsWriter`, its per-item
    arrays under ``<NAME>:<task>`` in the items file."""

    def __init__(self, parent: ResultsWriter, name: str, encoder: dict[str, Any]) -> None:
        self.parent, self.name = parent, name
        self.doc: dict = {"encoder": dict(encoder), "results": {}, "skipped": {}, "errors": {}}
        parent.doc.setdefault("sides", {})[name] = self.doc
        self.claimed: set[str] = set()

    def add_items(self, task: str, items: dict[str, np.ndarray]) -> None:
        self.parent.add_items(f"{self.name}:{task}", items)

    def flush(self) -> None:
        self.parent.flush()


SECTIONS = ("results", "skipped", "errors")
RESUME_KEYS = ("protocol", "encoder", "probing_source")


def compatibility_problem(old: dict, new: dict) -> str | None:
    """Why results document ``old`` cannot be merged with ``new`` (another encoder, protocol or probing source),
    else None. Encoders compare by name (descriptions carry paths and versions), protocols without the device."""
    for key in RESUME_KEYS:
        a, b = to_jsonable(old.get(key)), to_jsonable(new.get(key))
        if key == "encoder":
            a, b = (a or {}).get("name"), (b or {}).get("name")
        if key == "protocol":
            a = {k: v for k, v in (a or {}).items() if k != "device"}
            b = {k: v for k, v in (b or {}).items() if k != "device"}
        if a != b:
            return f"another {key} ({a!r}, now {b!r})"
    return None


class IncompatibleResultsFile(ValueError):
    """An existing results file that cannot be merged or resumed: unreadable, or written with another encoder,
    protocol or probing source (one line, naming the fix)."""


def _read_compatible(writer: ResultsWriter, path: Path, setting: str) -> dict:
    """The results document at ``path``, refused (``IncompatibleResultsFile``, one line) when unreadable or written
    with another encoder, protocol or probing source, so runs never mix."""
    try:
        old = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise IncompatibleResultsFile(f"{setting}: cannot read {path} ({err}): use another results_file, or "
                                      "overwrite=true to replace it") from None
    problem = compatibility_problem(old, writer.doc)
    if problem:
        raise IncompatibleResultsFile(f"{setting}: {path} was written with {problem}: use another results_file, "
                                      "or overwrite=true to replace it")
    return old


def resume_from(writer: ResultsWriter, path: Path) -> list[str]:
    """Take the finished tasks of an earlier run of the same evaluation into ``writer``; returns their names.
    A file written with another encoder or protocol is refused (one line), so runs never mix."""
    old = _read_compatible(writer, path, "resume=true")
    done = list(old.get("results", {}))
    writer.doc["results"].update(old.get("results", {}))
    writer.take_items_from_file(done)
    writer.doc["resumed"] = {"from": str(path), "tasks_kept": done}
    return done


def merge_into(writer: ResultsWriter, path: Path, running: list[str]) -> list[str]:
    """An existing results file of the same encoder and protocol is kept: its tasks that are not run again stay in
    ``writer`` (the ones in ``running`` are replaced when they finish). Returns the tasks kept; refuses (one line)
    a file of another encoder or protocol."""
    old = _read_compatible(writer, path, f"results_file={path} exists")
    writer.claim(running)
    kept = {task: result for task, result in old.get("results", {}).items() if task not in running}
    writer.doc["results"].update(kept)
    writer.take_items_from_file(list(kept))
    for section in ("skipped", "errors"):
        writer.doc[section].update({t: m for t, m in old.get(section, {}).items() if t not in running})
    writer.doc["merged"] = {"from": str(path), "tasks_kept": list(kept)}
    return list(kept)
