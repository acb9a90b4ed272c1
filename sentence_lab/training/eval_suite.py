"""The evaluation suite during training: task curves per epoch, in TensorBoard and in JSON (on by default).

    python train.py                                              # probing + STS + quick transfer tasks
    python train.py callbacks.eval_suite.tasks=[Length,WordContent,MR]
    python train.py ~callbacks.eval_suite                          # no evaluation during training

Once before the first training step (epoch 0: the untrained model) and after every ``every_n_epochs``
training epochs (epoch = epochs trained), on rank zero, the callback runs its
``sentence_lab.evaluation.suite.EvaluationSuite``
(the class ``evaluate.py`` runs) on ``pl_module.encode``, logs each task's main score to every attached
logger as ``<family>/<Task>`` (``probing/Length``, ``transfer/MR``, ``similarity/STS14``, ``relatedness/STSBenchmark``)
with step = epoch, and writes ``<output_dir>/epoch_NNN.json`` (+ ``.md``), the schema of ``evaluate.py``'s
results. At the end of fitting, each task's final and best score goes to every logger (TensorBoard's HParams tab
pairs them with the run's hyper-parameters). Task data is read once, at ``setup``, and its sentences tokenised once,
at the first evaluation (a model that ``RemembersTokens`` keeps them until ``teardown``);
an evaluation problem is logged and never stops
training; other ranks wait at a barrier.
"""
from __future__ import annotations

import json
import logging
import math
import random
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.loggers import TensorBoardLogger

from sentence_lab.evaluation.encoders.text_encoders import (
    EncodesLayers,
    ExpandsVocabulary,
    RemembersTokens,
    TextEncoder,
)
from sentence_lab.evaluation.geometry.tracking import LayerGeometry, draw_sample, geometry_metrics, stsb_data
from sentence_lab.evaluation.languages.sides import side_languages
from sentence_lab.evaluation.results import IncompatibleResultsFile, ResultsDocument, ResultsWriter
from sentence_lab.evaluation.runner import LoadedTask
from sentence_lab.evaluation.settings import SuiteSettings
from sentence_lab.evaluation.suite import EvaluationSuite
from sentence_lab.tasks.base import Split, TaskData
from sentence_lab.tasks.registry import TASKS
from sentence_lab.text.config_values import plain
from sentence_lab.training.trainer_state import fast_dev_run_of

log = logging.getLogger(__name__)

PRESET_NOTE = ("not SentEval's protocol: the scores of a fast curve preset (fewer examples and tasks: see `subsample` "
               "and `tasks`), to follow a run's curves cheaply; its agreement with the full protocol: docs/curves.md")
SUBSAMPLE_NOTE = ("not SentEval's protocol: splits capped at max_examples_per_split examples (a seeded random "
                  "subset, order kept); scores are not comparable with full-data results")
# each evaluation's layer geometry (sentence_lab.evaluation.geometry): sample of the suite's sentences, its seed, and
# the STS-B dev pairs of gold >= min_gold as alignment's positives
GEOMETRY_DEFAULTS = {"sample_size": 2000, "seed": 0, "min_gold": 4.0}
# The splits a cap may name: a task's train/dev/test, or the one split of a task scored by cross-validation.
SPLIT_NAMES = ("train", "dev", "test", "all")


# TensorBoard family of each task family (the registry's ``TaskSpec.family``).
def task_tag(task: str) -> str:
    """``probing/Length``, ``transfer/MR``, ``similarity/STS14``: the logged name of a task's main score."""
    spec = TASKS.get(task)
    return f"{spec.family if spec else 'eval'}/{task}"


def layer_metrics(doc: Mapping, tag: Callable[[str], str]) -> dict[str, float]:
    """Each task's score per layer (a results document of ``layers=true``) as ``<tag of the task>/layer_<k>``
    (``probing/Length/layer_0``): in TensorBoard's section of the task's family, beside the task's own curve."""
    out = {}
    for task, result in doc.get("results", {}).items():
        for k, layer in (result.get("layers") or {}).items():
            score = layer.get("main_score")
            if isinstance(score, (int, float)) and np.isfinite(score):
                out[f"{tag(task)}/layer_{k}"] = float(score)
    return out


def side_metrics(doc: Mapping, tag: Callable[[str], str]) -> dict[str, float]:
    """Each further language's scores (``sides[LANG]``) under the language's name: ``fr/probing/Length``,
    ``fr/retrieval/Tatoeba`` (the margin's mean error) and each retrieval error rate
    (``fr/retrieval/Tatoeba/margin_en-fr``)."""
    out = {}
    for language, side in (doc.get("sides") or {}).items():
        for task, result in (side.get("results") or {}).items():
            name = f"{language}/{tag(task) if task in TASKS else f'retrieval/{task}'}"
            score = result.get("main_score")
            if isinstance(score, (int, float)) and np.isfinite(score):
                out[name] = float(score)
            for kind, rates in (result.get("error") or {}).items():
                for direction, value in rates.items():
                    if isinstance(value, (int, float)):
                        out[f"{name}/{kind}_{direction.replace('->', '-')}"] = float(value)
    return out


def amnesic_metrics(doc: Mapping, root: str = "amnesic") -> dict[str, float]:
    """Each removed property's scores (``amnesic``, ``evaluation.amnesic``): ``<root>/<property>/<task>`` the task's
    score after the property's removal, ``.../control`` after the random removal, ``<root>/<property>/directions``
    how many directions it took (``root``: ``amnesic``, with the callback's prefix and preset)."""
    out = {}
    for prop, entry in (doc.get("amnesic") or {}).items():
        if not isinstance(entry, Mapping) or "tasks" not in entry:
            continue
        out[f"{root}/{prop}/directions"] = float(entry["directions"])
        for task, row in entry["tasks"].items():
            for key, suffix in (("after", ""), ("control", "/control")):
                value = row.get(key)
                if isinstance(value, (int, float)) and np.isfinite(value):
                    out[f"{root}/{prop}/{task}{suffix}"] = float(value)
    return out


def _epoch_document(path: Path) -> dict | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def finished_suite(path: Path) -> bool:
    """An epoch's file the suite wrote to its end (``eval_seconds``, its last field: after every task, a failed one
    recorded as such)."""
    doc = _epoch_document(path)
    return doc is not None and "eval_seconds" in doc


def cut_suite_at(path: Path, global_step: int) -> bool:
    """An epoch's file whose suite a stop cut at training step ``global_step``: the tasks in it are of these weights."""
    doc = _epoch_document(path)
    return doc is not None and "eval_seconds" not in doc and \
        (doc.get("encoder") or {}).get("global_step") == global_step


SplitCaps = int | Mapping[str, int | None] | None


def split_caps(max_examples: SplitCaps) -> int | dict[str, int | None] | None:
    """``max_examples_per_split`` checked: ``None``, one cap for every split, or a cap per split name (``train``,
    ``dev``, ``test``, ``all``; a split not named, or named with ``null``, stays whole)."""
    if max_examples is None:
        return None
    caps = plain(max_examples)
    if isinstance(caps, Mapping):
        unknown = sorted(set(caps) - set(SPLIT_NAMES))
        if unknown:
            raise ValueError(f"max_examples_per_split: no split named {', '.join(map(str, unknown))}; the splits "
                             f"are {', '.join(SPLIT_NAMES)} (one not named stays whole)")
        checked = {str(k): None if v is None else int(v) for k, v in caps.items()}
    else:
        checked = {"every split": int(caps)}
    bad = {k: v for k, v in checked.items() if v is not None and v < 1}
    if bad:
        raise ValueError(f"max_examples_per_split must be >= 1 or null, got {bad}")
    return int(caps) if not isinstance(caps, Mapping) else checked


def subsample(data: TaskData, max_examples: int | Mapping[str, int | None], seed: int) -> TaskData:
    """``data`` with every split longer than its cap cut to a seeded random subset (order kept). ``max_examples``:
    one cap for every split, or a cap per split name (a split not named stays whole). A split's subset depends on
    the seed, its place among the task's splits and its cap only, so a split capped alike in two presets is cut
    alike."""
    splits, cut = {}, {}
    for i, (name, split) in enumerate(data.splits.items()):
        cap = max_examples.get(name) if isinstance(max_examples, Mapping) else max_examples
        if cap is None or len(split) <= cap:
            splits[name] = split
            continue
        keep = np.sort(np.random.default_rng([seed, i]).choice(len(split), size=cap, replace=False))
        splits[name] = Split(a=[split.a[j] for j in keep], y=split.y[keep],
                             b=None if split.b is None else [split.b[j] for j in keep])
        cut[name] = f"{cap} of {len(split)}"
    if not cut:
        return data
    return TaskData(splits=splits, nclasses=data.nclasses, info={**data.info, "subsampled": cut})


class EvalSuiteCallback(Callback):
    """Run the evaluation suite on the model being trained before training and every ``every_n_epochs`` epochs.

    Args:
        tasks: task and group names, as for ``evaluate.py`` (default: the ten probing tasks).
        data_dir: the data root (SentEval layout under ``senteval/``, probing under ``probing/``).
        params: the ``evaluation`` config (conf/evaluation/prototype.yaml by default); ``encode_batch_size``
            is read from it too.
        output_dir: where ``epoch_NNN.json`` go; default ``<trainer.default_root_dir>/eval``.
        every_n_epochs: evaluate after n, 2n, ... epochs of training (logged step = epochs trained).
        before_training: also evaluate the untrained model, before the first step (epoch 0); not on resume.
        time_budget_s: per evaluation, tasks that would start after this many seconds are skipped and the
            cut recorded in the JSON (``None``: no limit).
        max_examples_per_split: ``None`` = SentEval's protocol on all the data; a number caps every split, a
            mapping caps the splits it names (``{train: 2000, dev: 500}``: the test sets whole); recorded in the
            JSON, per task and under ``protocol`` and ``subsample``.
        log_prefix: ``None`` logs ``<family>/<Task>``; a string logs ``<log_prefix>/<Task>`` instead.
        probing: where the probing tasks come from (auto: SentEval's, else X-Probe's, else the set generated
            from the shipped books; senteval, xprobe, generated, generated:<dir>).
        preset: the name of the preset these settings are (``curves``: conf/callbacks/eval_suite/curves.yaml), or
            ``None`` for the full protocol: recorded in each epoch's JSON (``preset``, ``protocol.preset``), and the
            scores logged as ``<family>_<preset>/<Task>`` (``probing_curves/Length``), never as the full protocol's.
        vocab_expansion: evaluate with vocabulary expansion, as ``evaluate.py`` does a checkpoint (fit anew
            for each evaluation, removed afterwards); skipped, with the reason in the JSON, when impossible.
        sides, side_probing: a two-language model's second language (J_bi's), scored each evaluation on its probing
            tasks and on translation retrieval (``evaluation.languages.sides``; auto, none or [codes]), logged as
            ``<lang>/probing/<Task>`` and ``<lang>/retrieval/Tatoeba``; where its probing tasks come from.
        retrieval_held_out, retrieval_path: the pairs the training data held out for retrieval
            (``data.retrieval_held_out`` of ``data.train.path``: the same draw); ``None``: 1,000 pairs of the data
            root's ``parallel/tatoeba/en-<lang>.tsv``.
        geometry: ``None`` (off), or the settings of each evaluation's layer geometry
            (``sentence_lab.evaluation.geometry.tracking``: ``sample_size``, ``seed``, ``min_gold``): every layer's
            linear CKA against epoch 0 and the previous evaluation, alignment and uniformity, in the epoch JSON
            (``geometry``) and logged as ``cka/layer_<k>/vs_epoch0``, ``geometry/alignment``, ...
    """

    def __init__(self, tasks: Any = "probing", data_dir: str | Path = "data", params: Mapping | None = None,
                 output_dir: str | Path | None = None, every_n_epochs: int = 1,
                 max_examples_per_split: SplitCaps = None, subsample_seed: int = 1111,
                 log_prefix: str | None = None, vocab_expansion: bool = True, before_training: bool = True,
                 time_budget_s: float | None = None, probing: str = "auto", preset: str | None = None,
                 sides: Any = "auto", side_probing: str = "auto", retrieval_held_out: int | None = None,
                 retrieval_path: str | Path | None = None, geometry: Mapping | None = None) -> None:
        super().__init__()
        self.geometry_settings = GEOMETRY_DEFAULTS | (plain(geometry) or {}) if geometry is not None else None
        unknown = set(self.geometry_settings or {}) - set(GEOMETRY_DEFAULTS)
        if unknown:
            raise ValueError(f"callbacks.eval_suite.geometry: unknown settings {sorted(unknown)}: use "
                             f"{sorted(GEOMETRY_DEFAULTS)}")
        self._geometry: LayerGeometry | None = None
        # the suite's settings, each normalised once (a task typo fails here, before training; reads no data)
        self.settings = SuiteSettings.from_config(
            {"tasks": plain(tasks), "probing": probing, "sides": plain(sides), "side_probing": side_probing,
             "retrieval_held_out": retrieval_held_out, "retrieval_path": retrieval_path}, plain(params))
        if preset is not None and not str(preset).isidentifier():
            raise ValueError(f"preset={preset!r}: a preset's name is a word (letters, digits, _), e.g. curves")
        self.preset = None if preset is None else str(preset)
        self.before_training = bool(before_training)
        self.time_budget_s = None if time_budget_s is None else float(time_budget_s)
        self.vocab_expansion = bool(vocab_expansion)
        self.data_dir = Path(data_dir)
        self.output_dir = Path(output_dir) if output_dir else None
        if int(every_n_epochs) < 1:
            raise ValueError(f"every_n_epochs must be >= 1, got {every_n_epochs}")
        self.every_n_epochs = int(every_n_epochs)
        self.max_examples_per_split = split_caps(max_examples_per_split)
        self.subsample_seed = int(subsample_seed)
        self.log_prefix = log_prefix
        self._suite: EvaluationSuite | None = None  # the tasks, loaded at setup on rank 0 only
        self._has_data: bool | None = None  # rank 0's answer, on every rank
        self.history: dict[int, dict[str, float | None]] = {}  # epoch -> task -> main score
        self._epoch_started: float | None = None
        self._told_fast_dev_run = False
        self._remembered_by: RemembersTokens | None = None  # the model holding the tasks' tokens for this fit
        # Called on every rank after each evaluation (and its barrier) with (trainer, epoch, scores_at(epoch) on
        # rank 0, None elsewhere): e.g. sentence_lab.runs.trial_pruning reports to an Optuna trial.
        self.after_evaluation: list[Callable[[Any, int, dict[str, float] | None], None]] = []

    # ---- data, once ---------------------------------------------------------------------------
    def setup(self, trainer, pl_module, stage: str) -> None:
        """Rank 0 reads the task data; whether there is any to evaluate is then shared with every rank, so all
        ranks take the same path to the barrier after each evaluation."""
        if stage != "fit" or self._has_data is not None:
            return
        side_languages(pl_module, self.settings.sides)  # a language it lacks: refused, one line
        if trainer.is_global_zero and self._suite is None:
            self._load()
        has_data = self._suite is not None and self._suite.has_data
        self._has_data = bool(trainer.strategy.broadcast(has_data, src=0))

    @property
    def _loaded(self) -> list[LoadedTask] | None:
        """The suite's tasks (their data subsampled when ``max_examples_per_split`` is set); None before setup."""
        return self._suite.tasks if self._suite is not None else None

    def _load(self) -> EvaluationSuite:
        t0 = time.perf_counter()
        self._suite = suite = EvaluationSuite.from_settings(self.settings, self.data_dir)
        loaded = suite.tasks
        missing = [t for t in loaded if t.missing]
        if len(missing) == len(loaded):
            log.warning("evaluation suite: no task data under %s (set paths.data_dir or SENTENCE_DATA): training goes "
                        "on without evaluation", self.data_dir)
        elif missing:
            log.warning("evaluation suite: no data for %s under %s: skipped (%s)",
                        ", ".join(t.spec.name for t in missing), self.data_dir, missing[0].error)
        for task in loaded:
            if task.error is not None and not task.missing:
                log.warning("evaluation suite: %s: skipped", task.error)
        if self.max_examples_per_split is not None:
            for task in loaded:
                if task.data is not None:
                    task.data = subsample(task.data, self.max_examples_per_split, self.subsample_seed)
            log.warning("evaluation suite: max_examples_per_split=%s: %s", self.max_examples_per_split,
                        SUBSAMPLE_NOTE)
        ready = [t.spec.name for t in loaded if t.data is not None]
        log.info("evaluation suite: %d tasks loaded in %.1fs (%s); evaluating every %d epoch(s)", len(ready),
                 time.perf_counter() - t0, ", ".join(ready) or "none", self.every_n_epochs)
        return suite

    def teardown(self, trainer, pl_module, stage: str) -> None:
        if stage == "fit":
            self._suite = None
            self._has_data = None
            if self._remembered_by is not None:
                self._remembered_by.forget_tokens()
                self._remembered_by = None

    # ---- before training and every n epochs ----------------------------------------------------
    def _skip(self, trainer) -> bool:
        if trainer.sanity_checking:
            return True
        if self._has_data is False:
            return True  # no task data at all: said once at setup (the same answer on every rank)
        if fast_dev_run_of(trainer):
            if not self._told_fast_dev_run:
                log.info("evaluation suite: not evaluating under fast_dev_run")
                self._told_fast_dev_run = True
            return True
        return False

    def _evaluate_on_rank_zero(self, trainer, pl_module, epoch: int, train_seconds: float | None) -> None:
        if trainer.is_global_zero:
            try:
                self.evaluate(trainer, pl_module, epoch, train_seconds)
            except Exception as err:
                log.error("evaluation suite: evaluation at epoch %d failed: %s: %s", epoch,
                          type(err).__name__, err, exc_info=log.isEnabledFor(logging.DEBUG))
        if trainer.world_size > 1:
            trainer.strategy.barrier("eval_suite")
        scores = self.scores_at(epoch) if trainer.is_global_zero else None
        for listener in self.after_evaluation:
            listener(trainer, epoch, scores)

    def on_train_start(self, trainer, pl_module) -> None:
        if self._skip(trainer):
            return
        if self.before_training and trainer.global_step == 0:
            self._evaluate_on_rank_zero(trainer, pl_module, 0, None)
        elif trainer.strategy.broadcast(self._suite_cut_before_resume(trainer), src=0):
            # stopped during the last epoch's suite, after that epoch's checkpoint: the resumed weights are that
            # epoch's, and its suite did not finish
            self._evaluate_on_rank_zero(trainer, pl_module, int(trainer.current_epoch), None)

    def _suite_cut_before_resume(self, trainer) -> bool:
        """A resumed run starting exactly at an epoch's end whose suite did not finish (its file missing or written in
        part): Lightning does not call that epoch's end hooks again (``checkpoints.epoch_end``)."""
        epoch, batches = int(trainer.current_epoch), getattr(trainer, "num_training_batches", math.inf)
        if epoch <= 0 or epoch % self.every_n_epochs or not math.isfinite(batches):
            return False
        steps = math.ceil(batches / max(1, int(getattr(trainer, "accumulate_grad_batches", 1) or 1)))
        return trainer.global_step == epoch * steps and not finished_suite(self._epoch_file(trainer, epoch))

    def _epoch_file(self, trainer, epoch: int) -> Path:
        return (self.output_dir or Path(trainer.default_root_dir) / "eval") / f"epoch_{epoch:03d}.json"

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._epoch_started = time.perf_counter()

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        trained = int(trainer.current_epoch) + 1
        if self._skip(trainer) or trained % self.every_n_epochs:
            return
        seconds = time.perf_counter() - self._epoch_started if self._epoch_started is not None else None
        self._evaluate_on_rank_zero(trainer, pl_module, trained, seconds)

    def final_scores(self) -> dict[str, float]:
        """The last evaluation's scores by tag (``probing/Length``, ``similarity/STS14``, ...) and each family's mean
        (``probing/mean``, ``similarity/mean``, ``transfer/mean``): what a hyper-parameter search can maximise."""
        return self.scores_at(max(self.history)) if self.history else {}

    def scores_at(self, epoch: int) -> dict[str, float]:
        """The scores of the evaluation after ``epoch`` epochs, by tag and family mean (as ``final_scores``)."""
        if epoch not in self.history:
            return {}
        scores = {task_tag(t): float(v) for t, v in self.history[epoch].items() if v is not None and np.isfinite(v)}
        families: dict[str, list[float]] = {}
        for tag, value in scores.items():
            families.setdefault(tag.split("/")[0], []).append(value)
        return scores | {f"{family}/mean": float(np.mean(values)) for family, values in families.items()}

    def on_fit_end(self, trainer, pl_module) -> None:
        """Each task's final and best score (``hparams/final/<Task>``, ``hparams/best/<Task>``) to every logger:
        with the run's hyper-parameters in TensorBoard's HParams tab, as scalars at the last epoch elsewhere."""
        if not trainer.is_global_zero or not self.history or fast_dev_run_of(trainer):
            return
        final_epoch = max(self.history)
        metrics: dict[str, float] = {}
        for task in self.settings.tasks:
            values = [(e, score) for e, s in sorted(self.history.items()) if (score := s.get(task)) is not None]
            if values:
                metrics[f"hparams/{self._kind('final')}/{task}"] = float(dict(values).get(final_epoch, values[-1][1]))
                metrics[f"hparams/{self._kind('best')}/{task}"] = float(max(v for _, v in values))
        params = {key: value for key, value in dict(getattr(pl_module, "hparams", {})).items()}
        if not metrics:
            return
        for logger in trainer.loggers:
            try:
                if isinstance(logger, TensorBoardLogger):  # its HParams tab pairs them with the settings
                    logger.log_hyperparams(params, metrics=metrics)
                else:  # every other logger takes them as scalars at the last evaluated epoch
                    logger.log_hyperparams(params)
                    logger.log_metrics(metrics, step=final_epoch)
                    if hasattr(logger, "save"):  # a file-backed logger (CSV) writes on save
                        logger.save()
            except Exception as err:  # noqa: BLE001
                log.error("evaluation suite: final scores to %s failed: %s", type(logger).__name__, err)

    def _kind(self, name: str) -> str:
        """``name``, or ``<name>_<preset>`` for a preset's scores (``final_curves``, ``probing_curves``)."""
        return f"{name}_{self.preset}" if self.preset else name

    def _tag(self, task: str) -> str:
        if self.log_prefix:
            return f"{self._kind(self.log_prefix)}/{task}"
        family, name = task_tag(task).split("/", 1)
        return f"{self._kind(family)}/{name}"

    def _measure_geometry(self, suite: EvaluationSuite, trainer, pl_module, epoch: int,
                          writer: ResultsWriter) -> dict[str, Any] | None:
        """This evaluation's ``geometry`` section, written into the epoch JSON; a failure is recorded there and
        logged, and the run goes on."""
        if self.geometry_settings is None:
            return None
        started = time.perf_counter()
        try:
            if not isinstance(pl_module, EncodesLayers):
                raise TypeError(f"{type(pl_module).__name__} does not give its layers' vectors")
            if self._geometry is None:
                settings = self.geometry_settings
                sample = draw_sample(suite.sentences(), int(settings["sample_size"]), int(settings["seed"]),
                                     stsb_data(suite.tasks, self.data_dir), float(settings["min_gold"]))
                self._geometry = LayerGeometry(sample, self._epoch_file(trainer, 0).parent / "geometry")
            section = self._geometry.measure(pl_module, epoch)
        except Exception as err:  # noqa: BLE001 - e.g. an encoder without layers: the suite's scores stand
            section = {"error": f"{type(err).__name__}: {err}", "seconds": round(time.perf_counter() - started, 3)}
            log.error("evaluation suite: epoch %d: layer geometry: %s", epoch, section["error"])
        writer.update(geometry=section)
        return section

    def _open_epoch_results(self, suite: EvaluationSuite, trainer, pl_module, epoch: int) -> ResultsWriter:
        """The writer of ``epoch_NNN.json``, its header written. A file already there is replaced, unless it is this
        epoch's suite cut by a stop at this very step (the run resumed there): its finished tasks are kept and the
        others run."""
        encoder = {"name": f"training:epoch_{epoch:03d}",
                   **(pl_module.describe() if isinstance(pl_module, TextEncoder) else {}),
                   "source": "EvalSuiteCallback during training", "epoch": epoch,
                   "global_step": int(trainer.global_step)}
        fields: dict[str, Any] = {"epoch": epoch}
        if self.preset:
            fields["preset"] = {"name": self.preset, "note": PRESET_NOTE}
        if self.max_examples_per_split is not None:
            fields["subsample"] = {"max_examples_per_split": self.max_examples_per_split, "seed": self.subsample_seed,
                                   "note": SUBSAMPLE_NOTE}
        protocol: dict[str, Any] = {"max_examples_per_split": self.max_examples_per_split}
        if self.preset:
            protocol.update(preset=self.preset, standard=f"preset {self.preset}, not SentEval's")
        path = self._epoch_file(trainer, epoch)
        if cut_suite_at(path, int(trainer.global_step)):
            try:
                return suite.open_results(path, kind="epoch", encoder_description=encoder, on_existing="resume",
                                          protocol_fields=protocol, **fields)
            except IncompatibleResultsFile as err:  # e.g. the suite's settings changed on resume: all tasks again
                log.warning("evaluation suite: epoch %d: not resuming its cut suite: %s", epoch, err)
        return suite.open_results(path, kind="epoch", encoder_description=encoder, on_existing="overwrite",
                                  protocol_fields=protocol, **fields)

    def evaluate(self, trainer, pl_module, epoch: int, train_seconds: float | None = None) -> ResultsDocument:
        """Run the tasks now on ``pl_module``; write the JSON, log the scores; return the results document.
        ``train_seconds``: how long the epoch's training took (the JSON records the evaluation's share)."""
        # fit without setup (e.g. a direct call): load now, once
        suite = self._suite if self._suite is not None else self._load()
        started = time.perf_counter()
        if isinstance(pl_module, RemembersTokens) and self._remembered_by is not pl_module:
            pl_module.remember_tokens(suite.sentences())  # tokenised once a fit; ids still per evaluation
            self._remembered_by = pl_module
        if self.vocab_expansion and isinstance(pl_module, ExpandsVocabulary):
            pl_module.expand_vocabulary()  # fit on this epoch's weights; describe() records it; undone below
        writer = self._open_epoch_results(suite, trainer, pl_module, epoch)
        modes = {m: m.training for m in pl_module.modules()}
        rng = (random.getstate(), np.random.get_state(), torch.get_rng_state(),
               torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None)
        pl_module.eval()
        try:
            doc = suite.run_into(writer, pl_module, budget_seconds=self.time_budget_s)
            geometry = self._measure_geometry(suite, trainer, pl_module, epoch, writer)
        except Exception as err:  # noqa: BLE001 - e.g. NaN embeddings (EncoderOutputError): keep training
            writer.update(aborted=f"{type(err).__name__}: {err}")
            log.error("evaluation suite: epoch %d: %s: %s (partial results in %s)", epoch, type(err).__name__,
                      err, writer.path)
            doc = cast(ResultsDocument, writer.doc)  # what was written before the failure
            geometry = None
        finally:
            if isinstance(pl_module, ExpandsVocabulary):
                pl_module.clear_vocabulary_expansion()
            for module, mode in modes.items():
                module.training = mode
            random.setstate(rng[0])
            np.random.set_state(rng[1])
            torch.set_rng_state(rng[2])
            if rng[3] is not None:
                torch.cuda.set_rng_state_all(rng[3])
        seconds = time.perf_counter() - started
        cost = {"eval_seconds": round(seconds, 2)}
        if train_seconds:
            cost.update(epoch_train_seconds=round(train_seconds, 2),
                        eval_share_of_epoch=round(seconds / train_seconds, 4))
        writer.update(**cost)
        scores = {name: r.get("main_score") for name, r in doc["results"].items()}
        self.history[epoch] = scores
        metrics = {self._tag(name): float(s) for name, s in scores.items() if s is not None and np.isfinite(s)}
        metrics.update(layer_metrics(doc, self._tag))
        metrics.update(geometry_metrics(geometry))
        metrics.update(side_metrics(doc, self._tag))
        metrics.update(amnesic_metrics(doc, self._kind(f"{self.log_prefix}/amnesic" if self.log_prefix else
                                                       "amnesic")))
        if metrics:
            for logger in trainer.loggers:
                try:
                    logger.log_metrics(metrics, step=epoch)
                except Exception as err:  # noqa: BLE001
                    log.error("evaluation suite: logging to %s failed: %s", type(logger).__name__, err)
        for message in doc.get("errors", {}).values():
            log.error("evaluation suite: epoch %d: %s", epoch, message)
        shown = ", ".join(f"{name} {s:.2f}" if s is not None else f"{name} n/a" for name, s in scores.items())
        log.info("evaluation suite%s, epoch %d (%.0f s%s): %s -> %s",
                 f" (preset {self.preset}, not SentEval's protocol)" if self.preset else "", epoch, seconds,
                 f", {100 * cost['eval_share_of_epoch']:.0f}% of the epoch's training" if train_seconds else "",
                 shown or "no results", writer.path)
        return doc
