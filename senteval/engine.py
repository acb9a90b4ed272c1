"""``SE(params, batcher, prepare)`` and ``SE.eval(name or names)``, as SentEval's ``senteval/engine.py`` offers them,
run by sentence-lab's evaluation engine (the same scores as SentEval's code on the same vectors, per seed).

What a client sees is SentEval's: the ``params`` keys and defaults, ``prepare(params, samples)`` once per task,
``batcher(params, batch)`` on token lists in SentEval's order, ``params.current_task``, and SentEval's result
dictionaries. What changes is listed in docs/senteval-api.md: no ``.cuda()`` (a GPU is used when present), a
list of tasks goes on past a task whose data is missing or that fails (named in the log and in
``SE.skipped`` / ``SE.errors``), and an unknown task name is refused before anything runs.

Each task goes straight to the engine's loaders and regimes, not through
``sentence_lab.evaluation.suite.EvaluationSuite`` (or
``runner.run_task``), because SentEval's contract is not the suite's: ``prepare`` and ``batcher`` called per task in
SentEval's batch order instead of one cached, length-sorted encoding pass, SentEval's own result keys (``yhat``
kept, no main score, seeds or timings), and no results file.
"""
from __future__ import annotations

import difflib
import logging
import time
from collections.abc import Callable
from pathlib import Path

from sentence_lab.evaluation.regimes import REGIMES, cosine_summary, task_params
from sentence_lab.tasks.base import MissingTaskData, TaskData, check_splits
from sentence_lab.tasks.registry import TASKS, TaskSpec

from . import feeding
from .params import protocol, with_defaults
from .results import senteval_result

__all__ = ["SE", "SENTEVAL_TASKS", "TaskNotAvailable"]

log = logging.getLogger("senteval")

# SentEval's list_tasks, in its order
SENTEVAL_TASKS = ("CR", "MR", "MPQA", "SUBJ", "SST2", "SST5", "TREC", "MRPC", "SICKRelatedness", "SICKEntailment",
                  "STSBenchmark", "SNLI", "ImageCaptionRetrieval", "STS12", "STS13", "STS14", "STS15", "STS16",
                  "Length", "WordContent", "Depth", "TopConstituents", "BigramShift", "Tense", "SubjNumber",
                  "ObjNumber", "OddManOut", "CoordinationInversion")
NOT_HERE = {"ImageCaptionRetrieval": "COCO caption retrieval is not implemented by sentence-lab's SentEval (it needs "
                                     "SentEval's ResNet features of COCO): run it with facebookresearch/SentEval",
            "STSBenchmark-fix": "SimCSE's fork's STS-B with fixed labels is not implemented by sentence-lab's SentEval"}
# SimCSE's fork of SentEval (princeton-nlp/SimCSE, SentEval/senteval/engine.py): SentEval's supervised tasks under these
# names; its STSBenchmark and SICKRelatedness are scored by cosine per split, which the results here add as
# 'train', 'dev' and 'test' entries beside SentEval's keys (see senteval.results).
ALIASES = {"STSBenchmark-finetune": "STSBenchmark", "SICKRelatedness-finetune": "SICKRelatedness"}


class TaskNotAvailable(ValueError):
    """A task name SentEval does not have, or one this implementation does not run."""


def check_name(name: object) -> str:
    """The name itself if ``SE.eval`` can run it, else a one-line error naming it (and the closest names)."""
    if not isinstance(name, str):
        raise TaskNotAvailable(f"task names are strings, got {name!r}: se.eval('MR') or se.eval(['MR', 'CR'])")
    if name in NOT_HERE:
        raise TaskNotAvailable(f"{name}: {NOT_HERE[name]}")
    if name not in SENTEVAL_TASKS and name not in ALIASES:
        close = difflib.get_close_matches(name, SENTEVAL_TASKS, n=3, cutoff=0.5)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise TaskNotAvailable(f"{name!r} is not a SentEval task{hint}: SentEval's tasks are "
                               f"{', '.join(t for t in SENTEVAL_TASKS if t not in NOT_HERE)}")
    return name


def load(spec: TaskSpec, task_path: Path, probing: str) -> TaskData:
    """A task from SentEval's data folder (``downstream/``, ``probing/``; our data root works too). Probing
    tasks: SentEval's files, else X-Probe's (``params['probing']`` picks a source: senteval, xprobe, generated,
    generated:<dir>)."""
    if spec.family != "probing":
        return check_splits(spec.name, spec.loader(task_path))
    if probing != "auto":
        return check_splits(spec.name, spec.loader(task_path, source=probing))
    try:
        return check_splits(spec.name, spec.loader(task_path, source="senteval"))
    except MissingTaskData as senteval_missing:
        missing_path = senteval_missing.path  # the name is unbound once the except clause ends
        try:
            data = check_splits(spec.name, spec.loader(task_path, source="xprobe"))
        except MissingTaskData:
            raise senteval_missing from None
    log.warning("%s: no %s in SentEval's layout; X-Probe's files are used (%s)", spec.name, missing_path,
                data.info.get("split", "xprobe"))
    return data


class SE:
    """SentEval's engine: ``SE(params, batcher, prepare=None).eval(name_or_names)``."""

    def __init__(self, params: dict, batcher: Callable, prepare: Callable | None = None) -> None:
        self.params = with_defaults(params)
        self.protocol = protocol(self.params)  # checked now; read again at every eval, as SentEval reads params
        self.batcher = batcher
        self.prepare = prepare if prepare else (lambda params, samples: None)
        self.list_tasks = [t for t in SENTEVAL_TASKS]
        self.results: dict = {}
        self.skipped: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        log.info("SentEval API of sentence-lab (%s): %s classifier, kfold %d, seed %d", Path(__file__).parent,
                 "scikit-learn" if self.protocol.backend == "sklearn" else "PyTorch", self.protocol.kfold,
                 self.protocol.seed)

    def eval(self, name):
        """One task name: its result (errors raised). A list: ``{name: result}`` for the tasks that ran; a task
        whose data is missing, or that fails, is logged, recorded in ``skipped`` or ``errors``, and the others
        run. Every name is checked before anything runs."""
        if isinstance(name, (list, tuple)):
            for n in name:
                check_name(n)
            self.results, self.skipped, self.errors = {}, {}, {}
            results = {}
            for n in name:
                try:
                    results[n] = self.eval(n)
                except MissingTaskData as err:
                    self.skipped[n] = str(err)
                    log.warning("%s skipped: %s", n, err)
                except Exception as err:  # noqa: BLE001 - one task's failure must not lose the others
                    self.errors[n] = f"{type(err).__name__}: {err}"
                    log.error("%s failed: %s: %s", n, type(err).__name__, err)
            self._summary(results, list(name))
            self.results = results
            return results
        spec = TASKS[ALIASES.get(check_name(name), name)]
        t0 = time.perf_counter()
        self.protocol = protocol(self.params)
        data = load(spec, Path(str(self.params.task_path)), str(self.params.get("probing") or "auto"))
        similarity = self.params.get("similarity")  # read before prepare, as sts.py's do_prepare does
        self.params.current_task = name
        self.prepare(self.params, feeding.samples(data))
        embed = feeding.lookup(feeding.encode_with_batcher(spec.name, data, self.params, self.batcher))
        # STS12-16 are scored by cosine; SICK-R and STS-B get their cosine per split too (SimCSE's fork's keys)
        cosine = (cosine_summary(data.splits, embed, similarity, pvalues=True)
                  if spec.regime in ("cosine", "regression") else None)
        raw = cosine if spec.regime == "cosine" else REGIMES[spec.regime](spec, data, embed,
                                                                          task_params(spec, self.protocol))
        self.results = senteval_result(spec, raw, cosine)
        log.info("%s done in %.1f s", name, time.perf_counter() - t0)
        return self.results

    def _summary(self, results: dict, names: list[str]) -> None:
        line = f"SentEval: {len(results)} of {len(names)} tasks done"
        if self.skipped:
            line += f"; skipped for missing data: {', '.join(n for n in names if n in self.skipped)}"
        if self.errors:
            line += f"; failed: {', '.join(n for n in names if n in self.errors)}"
        (log.warning if self.skipped or self.errors else log.info)(line)
