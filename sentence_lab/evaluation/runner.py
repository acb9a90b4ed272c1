"""Run a list of SentEval tasks with one encoder and write the results as each task ends."""
from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from sentence_lab.evaluation.encoders.text_encoders import (
    ChecksCoverage,
    EncoderOutputError,
    EncodesLayers,
    ReportsOOV,
    RunsTasks,
    TextEncoder,
)
from sentence_lab.evaluation.probing import measures as probing_measures
from sentence_lab.evaluation.probing.floors import highest_floor, probing_floors
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.regimes import (
    DEV_ONLY_NOTE,
    DEV_ONLY_SCORE,
    REGIMES,
    NoDevSplit,
    dev_view,
    run_dev_only,
    task_params,
)
from sentence_lab.evaluation.results import ResultsDocument, ResultsWriter
from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache
from sentence_lab.evaluation.vectors.layer_store import LayerStore
from sentence_lab.tasks.base import MissingTaskData, TaskData, TaskDataError, check_splits
from sentence_lab.tasks.registry import TASKS, TaskSpec, get_path, resolve_tasks

log = logging.getLogger(__name__)


@dataclass
class LoadedTask:
    spec: TaskSpec
    data: TaskData | None = None
    error: str | None = None
    missing: bool = False


def load_tasks(names, data_dir: Path | str, console=None, probing: str = "auto",
               language: str = "en") -> list[LoadedTask]:
    """Resolve task and group names (raises ``UnknownTask``), then load each task (``load_named_tasks``)."""
    return load_named_tasks(resolve_tasks(names), data_dir, console=console, probing=probing, language=language)


def load_named_tasks(names: Iterable[str], data_dir: Path | str, console=None, probing: str = "auto",
                     language: str = "en") -> list[LoadedTask]:
    """Load each task of ``names`` (task names, already resolved); data problems become one-line errors.
    ``probing``: where the probing tasks come from (``sentence_lab.tasks.probing``: auto, senteval, xprobe,
    generated, generated:<dir>); ``language``: the probing tasks' language (another than English: a model's second
    side, ``sentence_lab.evaluation.languages.sides``)."""
    out = []
    for name in names:
        spec = TASKS[name]
        kwargs: dict[str, str] = {"source": probing} if spec.family == "probing" else {}
        if spec.family == "probing" and language != "en":
            kwargs["language"] = language
        try:
            out.append(LoadedTask(spec, data=check_splits(name, spec.loader(Path(data_dir), **kwargs))))
        except MissingTaskData as err:
            out.append(LoadedTask(spec, error=str(err), missing=True))
        except TaskDataError as err:
            out.append(LoadedTask(spec, error=f"{name}: {err}"))
        if out[-1].error and console is not None:
            console.print(f"[yellow]{out[-1].error}[/yellow]", highlight=False, soft_wrap=True)
    return out


def all_sentences(loaded: list[LoadedTask]) -> list[str]:
    """The distinct sentences of the loaded tasks, first-seen order."""
    seen: dict[str, None] = {}
    for task in loaded:
        if task.data is not None:
            seen.update(dict.fromkeys(task.data.sentences()))
    return list(seen)


def params_from_config(cfg: Mapping):
    """``ProtocolParams`` from the ``evaluation`` config group (``classifier.nhid``/``dropout`` included)."""
    flat = {k: v for k, v in dict(cfg).items() if k != "classifier"}
    for key, value in dict(cfg.get("classifier") or {}).items():
        flat[key] = value
    known = {f.name: f for f in dataclasses.fields(ProtocolParams)}
    convert = {"l2_grid": lambda v: tuple(float(x) for x in v),
               "seeds": lambda v: None if v is None else tuple(int(x) for x in v),
               "nhid_grid": lambda v: None if v is None else tuple(int(x) for x in v),
               "dropout_grid": lambda v: None if v is None else tuple(float(x) for x in v)}
    kwargs = {k: convert.get(k, lambda v: v)(v) for k, v in flat.items() if k in known}
    return ProtocolParams(**kwargs)


SEED_METRICS = ("acc", "devacc", "pearson", "spearman", "mse", "devpearson", "f1")


def run_seeds(regime, spec, data, embed, params) -> dict:
    """The regime once per classifier seed. One seed: SentEval's result as it is. Several: the first seed's
    result with each metric replaced by its mean over seeds, plus ``seeds`` ({seed: metrics}) and ``sd``."""
    seeds = params.classifier_seeds()
    runs = {seed: regime(spec, data, embed, dataclasses.replace(params, seed=seed, seeds=None)) for seed in seeds}
    first = runs[seeds[0]]
    if len(seeds) == 1:
        return first
    out = dict(first)
    keys = [k for k in SEED_METRICS if isinstance(first.get(k), (int, float))]
    out["seeds"] = {str(seed): {k: r[k] for k in keys} for seed, r in runs.items()}
    out["sd"] = {}
    for k in keys:
        values = np.array([r[k] for r in runs.values()], dtype=np.float64)
        out[k] = round(float(values.mean()), 4)
        out["sd"][k] = round(float(values.std(ddof=1)), 4)
    return out


def _summary_line(task: str, result: dict) -> str:
    score = result.get("main_score")
    shown = "n/a" if score is None else (f"{score:.2f}" if abs(score) > 1.5 else f"{score:.4f}")
    extra = f" f1 {result['f1']:.2f}" if "f1" in result else ""
    floor = highest_floor(result.get("floors") or {})
    if floor is not None:  # the highest of the set's own baselines: the floor the score is read against
        extra += f" (floor {floor[1]:.2f} {floor[0]})"
    return (f"{task:<22} {result['main_metric']} {shown}{extra}  (n={result['n']}, {result['seconds']:.1f}s: "
            f"encode {result['encode_seconds']:.1f}s, classifier {result['classifier_seconds']:.1f}s)")


def run_task(task: LoadedTask, cache: EmbeddingCache, params, layers: bool = False) -> dict:
    """One task: encode its sentences (cached), run its regime, add main score, size and timings. ``layers``: score
    every layer of an encoder that has them too (:func:`score_layers`), under the result's ``layers``."""
    spec, data = task.spec, task.data
    if data is None:
        raise ValueError(f"{spec.name}: no data loaded")
    t0, enc0 = time.perf_counter(), cache.seconds
    run_params = task_params(spec, params)
    main_score = spec.main_score
    if isinstance(cache.encoder, RunsTasks):  # a task-level baseline (NB-tfidf): it classifies the text itself
        result = cache.encoder.run_task(spec, data, run_params)
    else:
        if params.dev_only:  # the test split is dropped before anything is encoded
            data = dev_view(spec, data)
            main_score = DEV_ONLY_SCORE[spec.regime]
        elif isinstance(cache.encoder, ChecksCoverage):  # precomputed vectors: say every missing sentence of the task
            cache.encoder.check_covers(list(dict.fromkeys(data.sentences())))
        cache.embed(data.sentences())  # one length-sorted pass; the regime below only hits the cache
        result = score(spec, data, cache.embed, run_params)
    result.pop("yhat", None)  # per-example predictions stay out of the results file
    seconds = time.perf_counter() - t0
    encode_seconds = cache.seconds - enc0
    result.update({
        "main_score": get_path(result, main_score),
        "main_metric": main_score,
        **({"main_score_sd": result["sd"][main_score]} if main_score in result.get("sd", {}) else {}),
        "n": data.n,
        "seconds": round(seconds, 3),
        "encode_seconds": round(encode_seconds, 3),
        "classifier_seconds": round(seconds - encode_seconds, 3),
        "regime": spec.regime,
    })
    if isinstance(cache.encoder, ReportsOOV):
        # Share of the task's tokens the encoder maps to <unk> (distinct sentences, all splits).
        rate = cache.encoder.oov_rate(list(dict.fromkeys(data.sentences())))
        if rate is not None:
            result["oov_rate"] = round(float(rate), 4)
    if spec.params_override:
        result["params_override"] = {k: getattr(run_params, k) for k in spec.params_override}
    if spec.note:
        result["note"] = spec.note
    if spec.family == "probing" and spec.regime == "split" and not params.dev_only and "floors" not in data.info:
        # the set's own Table 2 baselines, once per loaded set (a generated set's meta.json brings them along)
        data.info["floors"] = probing_floors(*((data.splits[name].a, data.splits[name].y)
                                               for name in ("train", "dev", "test")))
    result.update(data.info)
    if layers and isinstance(cache.encoder, EncodesLayers) and not isinstance(cache.encoder, RunsTasks):
        try:
            result.update(score_layers(spec, data, cache, run_params, result))
        except EncoderOutputError:
            raise
        except Exception as err:  # the layers fail alone: the task's own score stays
            log.debug("layers of %s failed", spec.name, exc_info=True)
            result["layers_error"] = f"{type(err).__name__}: {err}".replace("\n", " ")
    elif layers:
        result["layers_error"] = (f"{cache.name} does not expose its layers (encode_layers): only its output is "
                                  "scored")
    return result


def score(spec: TaskSpec, data: TaskData, embed, run_params) -> dict:
    """The task's regime (once per classifier seed; dev-only when the protocol says) and, for probing tasks, the
    controls and codelength the protocol asks for, on ``embed``'s vectors."""
    if run_params.dev_only:
        result = run_seeds(run_dev_only, spec, data, embed, run_params)
    elif spec.regime == "cosine":  # no classifier: the seeds change nothing
        result = REGIMES[spec.regime](spec, data, embed, run_params)
    else:
        result = run_seeds(REGIMES[spec.regime], spec, data, embed, run_params)
    if probing_measures.applies(spec, run_params):  # controls, selectivity, MDL: on the same vectors
        result.update(probing_measures.measure(spec, data, embed, dataclasses.replace(run_params, seeds=None),
                                               result))
    return result


# What a layer's entry copies of the task's own result when the top layer is the encoder's output.
OUTPUT_SCORE_KEYS = ("main_score", "main_metric", "main_score_sd")


def score_layers(spec: TaskSpec, data: TaskData, cache: EmbeddingCache, run_params, result: dict) -> dict:
    """Every layer of the encoder on the task: one ``encode_layers`` pass over its sentences (``LayerStore``), then
    the task's regime per layer. Returns ``layers`` ({"0": {main_score, main_metric, SentEval's keys, seconds},
    ...}; the top layer, when it is the encoder's output, copies the task's own score, marked ``"output": true``),
    ``layers_seconds`` and ``layers_encode_seconds``."""
    encoder = cast(EncodesLayers, cache.encoder)
    t0 = time.perf_counter()
    out: dict[str, dict] = {}
    preds: dict[str, np.ndarray] = {}  # each layer's predictions on the task's items: kept only if every layer scores
    with LayerStore.encode(encoder, data.sentences(), cache.batch_size, name=cache.name) as store:
        for k in range(len(store)):
            if k == len(store) - 1 and encoder.layers_end_with_output:
                out[str(k)] = {key: result[key] for key in OUTPUT_SCORE_KEYS if key in result} | {
                    "width": store.widths[k], "output": True}
                if "items" in result:
                    preds[f"layer_{k}/pred"] = result["items"]["pred"]
                continue
            started = time.perf_counter()
            layer = score(spec, data, store.embedder(k), run_params)
            layer.pop("yhat", None)
            if "items" in layer:
                preds[f"layer_{k}/pred"] = layer.pop("items")["pred"]
            metric = result["main_metric"]
            out[str(k)] = {"main_score": get_path(layer, metric), "main_metric": metric,
                           **({"main_score_sd": layer["sd"][metric]} if metric in layer.get("sd", {}) else {}),
                           **layer, "width": store.widths[k], "seconds": round(time.perf_counter() - started, 3)}
        encode_seconds = store.seconds
    if "items" in result:
        result["items"].update(preds)
    return {"layers": out, "layers_seconds": round(time.perf_counter() - t0, 3),
            "layers_encode_seconds": round(encode_seconds, 3)}


def run_tasks(loaded: list[LoadedTask], encoder, params, writer: ResultsWriter, console=None,
              encode_batch_size: int = 128, budget_seconds: float | None = None,
              layers: bool = False) -> ResultsDocument:
    """Run every loaded task in order; each result is written as soon as it exists. ``layers``: every layer of the
    encoder scored too (``run_task``).

    ``budget_seconds``: tasks that would start later than that are skipped, with the reason recorded.

    Missing data: recorded under ``skipped``, the run goes on. Any other failure of one task:
    recorded under ``errors``, the run goes on. A broken encoder (NaN, wrong shape) stops the run
    with ``EncoderOutputError``, after writing what was done.
    """
    name = encoder.describe().get("name") if isinstance(encoder, TextEncoder) else None
    if params.dev_only:
        writer.update(dev_only=DEV_ONLY_NOTE)
    cache = EmbeddingCache(encoder, batch_size=encode_batch_size, name=name or type(encoder).__name__)
    last_use: dict[str, int] = {}
    for i, task in enumerate(loaded):
        if task.data is not None:
            for s in task.data.sentences():
                last_use[s] = i
    for task in loaded:
        if task.error is not None:
            (writer.add_skipped if task.missing else writer.add_error)(task.spec.name, task.error)
    runnable = [(i, t, t.data) for i, t in enumerate(loaded) if t.data is not None]
    started = time.perf_counter()
    progress = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                        TimeElapsedColumn(), console=console, transient=True, disable=console is None)
    with progress:
        bar = progress.add_task("SentEval", total=len(runnable))
        for i, task, data in runnable:
            name = task.spec.name
            progress.update(bar, description=f"{name} ({task.spec.regime})")
            if budget_seconds is not None and time.perf_counter() - started > budget_seconds:
                writer.add_skipped(name, f"time budget of {budget_seconds:g} s reached before this task")
                writer.update(time_budget={"seconds": budget_seconds, "cut": True})
                cache.forget([s for s in data.sentences() if last_use.get(s) == i])
                task.data = None
                progress.advance(bar)
                continue
            try:
                result = run_task(task, cache, params, layers=layers)
            except EncoderOutputError as err:
                writer.update(aborted=f"{name}: {err}")
                raise
            except NoDevSplit as err:
                writer.add_skipped(name, str(err))
            except Exception as err:  # one task's failure must not lose the others
                log.debug("task %s failed", name, exc_info=True)
                message = f"{name} failed: {type(err).__name__}: {err}".replace("\n", " ")
                writer.add_error(name, message)
                if console is not None:
                    console.print(f"[red]{message}[/red]", highlight=False, soft_wrap=True)
            else:
                items = result.pop("items", None)
                if items is not None:
                    writer.add_items(name, items)
                writer.add_result(name, result)
                if console is not None:
                    progress.console.print(_summary_line(name, result), highlight=False, soft_wrap=True)
            finally:
                cache.forget([s for s in data.sentences() if last_use.get(s) == i])
                task.data = None  # free the text too
            progress.advance(bar)
    writer.update(total_seconds=round(time.perf_counter() - started, 3),
                  encode_seconds=round(cache.seconds, 3), sentences_encoded=cache.encoded)
    return cast(ResultsDocument, writer.doc)
