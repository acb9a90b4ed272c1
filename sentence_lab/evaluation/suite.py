"""One way to run an evaluation: a task list, loaded once, run for an encoder into a results document.

    suite = EvaluationSuite(["MR", "STS14", "probing"], data_dir, PROTOTYPE)   # the tasks, loaded once
    doc = suite.run(encoder, "results.json")                   # an existing file of this encoder is merged
    doc = suite.run(other_encoder, "other.json", on_existing="overwrite")
    suite = EvaluationSuite.from_config(cfg, cfg.evaluation, data_dir)     # a config's settings, read once

``evaluate.py`` and the per-epoch callback of training both make their suite from their config
(``settings.SuiteSettings.from_config``) and run their tasks through this class. It builds the
results header (``results.results_meta``), the writer (``results.ResultsWriter``) and applies the results-file
policy, then runs the tasks (``runner.run_tasks``) and returns the document. A suite is reusable: each run works
on copies of the loaded tasks, so the task data stays for the next run.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from sentence_lab.evaluation.encoders.text_encoders import EncoderOutputError, TextEncoder
from sentence_lab.evaluation.languages.sides import SideTasks, load_retrieval, run_side, side_languages
from sentence_lab.evaluation.probing.amnesic import amnesic_line, amnesic_property
from sentence_lab.evaluation.protocol import PROTOTYPE, ProtocolParams
from sentence_lab.evaluation.results import (
    IncompatibleResultsFile,
    Kind,
    ResultsDocument,
    ResultsWriter,
    merge_into,
    protocol_record,
    results_meta,
    resume_from,
)
from sentence_lab.evaluation.runner import LoadedTask, all_sentences, load_named_tasks, run_tasks
from sentence_lab.evaluation.settings import SuiteSettings
from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache
from sentence_lab.tasks.registry import resolve_tasks
from sentence_lab.tasks.tatoeba import RETRIEVAL_SIZE

__all__ = ["EvaluationSuite", "IncompatibleResultsFile", "OnExisting"]

# What a run does with a results file that already exists:
#   merge      keep the file's other tasks (same encoder, protocol and probing source), replace the ones run now,
#              and take the tasks other writers of the file add meanwhile;
#   resume     keep the file's finished tasks and run only the others;
#   overwrite  replace the file.
# merge and resume refuse, in one line (results.IncompatibleResultsFile, a ValueError), a file written with another
# encoder, protocol or probing source.
OnExisting = Literal["merge", "resume", "overwrite"]

LAYERS_NOTE = ("every layer scored: results[TASK].layers holds layer 0 (the pooled word vectors) to the top, each "
               "pooled as the encoder pools its top; results[TASK] itself is the encoder's output")


class EvaluationSuite:
    """Tasks (names or groups, as ``evaluate.py``'s ``tasks=``) loaded once from ``data_dir`` and run, as often as
    needed, for an encoder into a results file.

    Args:
        tasks: task and group names (``"MR"``, ``["MR", "sts"]``, ``"all"``); an unknown name raises
            ``sentence_lab.tasks.UnknownTask`` before any data is read.
        data_dir: the data root (SentEval's layout under ``senteval/``, probing under ``probing/``).
        params: the classifier protocol (``ProtocolParams``; ``runner.params_from_config`` makes it from a config).
        probing: where the probing tasks come from (auto, senteval, xprobe, generated, generated:<dir>).
        encode_batch_size: sentences per ``encode`` call; recorded in the protocol header.
        layers: score every layer of an encoder that exposes them (``text_encoders.EncodesLayers``) too, under each
            task's ``layers`` (``runner.score_layers``); the task's own score stays the encoder's output.
        sides: the further languages of a model with several (``text_encoders.HasLanguages``: J_bi's) to score, each
            on its language's probing tasks (those of ``tasks``) and on translation retrieval against the first, into
            the results' ``sides[LANG]`` (``languages.sides``): ``auto`` (every one), ``none``, or a
            list of codes (one the encoder lacks is refused in one line when the run starts).
        side_probing: where a side's probing tasks come from (``tasks.probing``: auto reads
            ``probing/xprobe-<lang>`` or ``probing/generated-<lang>``; xprobe, generated, generated:<dir>).
        retrieval_held_out: held-out Tatoeba pairs per language: the training data's ``retrieval_held_out`` (the
            same draw: a model never saw them), 1,000 for ``data=tatoeba_*``.
        retrieval_path: the pair file to hold them out of (default ``parallel/tatoeba/en-<lang>.tsv``).
        amnesic: probing tasks whose property is removed from the vectors (INLP) before the transfer and similarity
            tasks are scored again, and as many random directions (the control), into the results' ``amnesic``
            (``evaluation.probing.amnesic``; off when empty).
        console: a ``rich`` console for the loading problems (one line per task), or None for silence.

    A task whose data is missing or broken stays in ``tasks`` with its one-line ``error``: every run records it
    under ``skipped`` or ``errors``.
    """

    def __init__(self, tasks: str | Iterable[str], data_dir: Path | str, params: ProtocolParams = PROTOTYPE, *,
                 probing: str = "auto", encode_batch_size: int = 128, layers: bool = False,
                 sides: str | Iterable[str] = "auto", side_probing: str = "auto",
                 retrieval_held_out: int | None = None, retrieval_path: Path | str | None = None,
                 amnesic: Iterable[str] = (), console=None) -> None:
        self._start(SuiteSettings(tasks=tuple(resolve_tasks(tasks)), params=params, probing=probing,
                                  encode_batch_size=encode_batch_size, layers=layers,
                                  sides=sides if isinstance(sides, str) else tuple(sides), side_probing=side_probing,
                                  retrieval_held_out=retrieval_held_out,
                                  retrieval_path=None if retrieval_path is None else str(retrieval_path),
                                  amnesic=tuple(resolve_tasks(list(amnesic))) if amnesic else ()),
                    data_dir, console)

    @classmethod
    def from_settings(cls, settings: SuiteSettings, data_dir: Path | str, console=None) -> EvaluationSuite:
        """The suite of ``settings`` (``sentence_lab.evaluation.settings``), its tasks loaded from ``data_dir``."""
        suite = cls.__new__(cls)
        suite._start(settings, data_dir, console)
        return suite

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], protocol: Mapping[str, Any] | None, data_dir: Path | str,
                    console=None) -> EvaluationSuite:
        """The suite a config asks for: its suite keys (``tasks``, ``probing``, ``sides``, ...) and its
        ``evaluation`` group, read once by ``SuiteSettings.from_config``."""
        return cls.from_settings(SuiteSettings.from_config(cfg, protocol), data_dir, console)

    def _start(self, settings: SuiteSettings, data_dir: Path | str, console) -> None:
        self.settings = settings
        self.data_dir = Path(data_dir)
        self.params = settings.params
        self.probing = settings.probing
        self.encode_batch_size = settings.encode_batch_size
        self.layers = settings.layers
        self.sides = settings.sides
        self.side_probing = settings.side_probing
        self.retrieval_held_out = settings.retrieval_held_out or RETRIEVAL_SIZE
        self.retrieval_path = settings.retrieval_path
        self._side_tasks: dict[str, SideTasks] = {}  # language -> its tasks, loaded the first time a side is run
        self.task_names: list[str] = list(settings.tasks)
        self.tasks: list[LoadedTask] = load_named_tasks(self.task_names, self.data_dir, console=console,
                                                        probing=self.probing)
        self.amnesic = settings.amnesic
        loaded = {task.spec.name: task for task in self.tasks}
        extra = [name for name in self.amnesic if name not in loaded]  # a property need not be a task of the run
        loaded.update({task.spec.name: task for task in load_named_tasks(extra, self.data_dir, console=console,
                                                                          probing=self.probing)} if extra else {})
        self.amnesic_tasks = [loaded[name] for name in self.amnesic]

    @property
    def has_data(self) -> bool:
        """Whether any task has data to run."""
        return any(task.data is not None for task in self.tasks)

    def sentences(self) -> list[str]:
        """The distinct sentences of the tasks, first-seen order (the vocabulary of an untrained encoder)."""
        return all_sentences(self.tasks)

    def run(self, encoder, results_file: Path | str, *, kind: Kind = "evaluate",
            encoder_description: Mapping[str, Any] | None = None, on_existing: OnExisting = "merge",
            protocol_fields: Mapping[str, Any] | None = None, console=None, budget_seconds: float | None = None,
            **fields: Any) -> ResultsDocument:
        """Run every task for ``encoder`` into ``results_file`` (JSON, and a Markdown table beside it, rewritten as
        each task ends) and return the document: :meth:`open_results`, then :meth:`run_into`.

        An encoder output of the wrong shape, width or dtype stops the run with ``text_encoders.EncoderOutputError``
        after writing what was done; any other failure (NaN vectors included) fails its task alone, recorded.
        ``budget_seconds``: tasks that would start later are skipped, the cut recorded. A side asked of an
        encoder without it is refused (``sides.NoSuchSide``, one line) before anything is written."""
        side_languages(encoder, self.sides)
        writer = self.open_results(results_file, kind=kind, encoder_description=self._description(encoder,
                                   encoder_description), on_existing=on_existing, protocol_fields=protocol_fields,
                                   console=console, **fields)
        return self.run_into(writer, encoder, console=console, budget_seconds=budget_seconds)

    def open_results(self, results_file: Path | str, *, kind: Kind = "evaluate",
                     encoder_description: Mapping[str, Any] | None = None, on_existing: OnExisting = "merge",
                     protocol_fields: Mapping[str, Any] | None = None, console=None,
                     **fields: Any) -> ResultsWriter:
        """The writer of a run, its header written: ``kind``, the protocol (``params``, ``encode_batch_size``,
        ``protocol_fields``), the encoder's description, the tasks, ``data_dir``, ``probing_source``, ``fields``
        (``epoch=``, ...), versions and git revision; an existing ``results_file`` handled as ``on_existing`` says
        (raises ``results.IncompatibleResultsFile`` before writing anything when it cannot be merged or resumed).
        For callers that add to the document after the run (:meth:`run_into`, then ``writer.update``)."""
        if on_existing not in get_args(OnExisting):
            raise ValueError(f"on_existing={on_existing!r}: use one of {', '.join(get_args(OnExisting))}")
        results_file = Path(results_file)
        protocol = protocol_record(self.params, encode_batch_size=self.encode_batch_size, **(protocol_fields or {}))
        if self.layers:
            fields = {"layers": LAYERS_NOTE, **fields}
        meta = results_meta(kind, protocol, dict(encoder_description or {}), self.task_names,
                            data_dir=str(self.data_dir), probing_source=self.probing, **fields)
        # merge and resume take what other writers of the same file put there meanwhile (each keeps its tasks)
        writer = ResultsWriter(results_file, meta, merge_with_file=on_existing != "overwrite")
        writer.claim(self.task_names)
        if results_file.is_file() and on_existing == "resume":
            done = resume_from(writer, results_file)
            writer.claimed.difference_update(done)  # kept as the file has them, not run again
            _say(console, f"resume: {len(done)} task(s) already in {results_file}: {', '.join(done) or 'none'}")
        elif results_file.is_file() and on_existing == "merge":
            kept = merge_into(writer, results_file, self.task_names)
            _say(console, f"{results_file} exists: its other {len(kept)} task(s) are kept ({', '.join(kept) or 'none'})"
                          "; the ones run now replace theirs")
        writer.flush()
        _say(console, f"results -> {results_file}")
        return writer

    def run_into(self, writer: ResultsWriter, encoder, *, console=None,
                 budget_seconds: float | None = None) -> ResultsDocument:
        """Run the tasks ``writer`` has claimed (:meth:`open_results` claims them all, ``resume`` releases the
        finished ones) for ``encoder``, each result written as it ends; returns ``writer``'s document."""
        tasks = [dataclasses.replace(task) if task.spec.name in writer.claimed else  # run_tasks drops its copy's data
                 dataclasses.replace(task, data=None, error=None) for task in self.tasks]
        doc = run_tasks(tasks, encoder, self.params, writer, console=console,
                        encode_batch_size=self.encode_batch_size, budget_seconds=budget_seconds, layers=self.layers)
        if self.amnesic_tasks:
            self.run_amnesic(writer, encoder, console=console)
        for language in side_languages(encoder, self.sides):
            side = encoder.in_language(language)
            description = side.describe() if isinstance(side, TextEncoder) else {}
            name = f"{(writer.doc.get('encoder') or {}).get('name', '?')}[{language}]"  # the model's, in a language
            side_writer = writer.side(language, {**description, "name": name, "language": language})
            run_side(encoder, language, self.side_tasks(language), self.params, side_writer, console=console,
                     encode_batch_size=self.encode_batch_size)
        return doc

    def run_amnesic(self, writer: ResultsWriter, encoder, console=None) -> None:
        """Each ``amnesic`` property removed in turn (``evaluation.probing.amnesic``), the run's transfer and
        similarity tasks scored after it and after the control; into the document's ``amnesic``, one property at a
        time. A property that fails is recorded with its error; the others go on."""
        if self.params.dev_only:
            writer.update(amnesic={"skipped": "dev_only: the test splits are not scored"})
            return
        targets = [task for task in self.tasks if task.data is not None and task.spec.family != "probing"]
        before = {name: result.get("main_score") for name, result in writer.doc.get("results", {}).items()}
        cache = EmbeddingCache(encoder, batch_size=self.encode_batch_size)
        out: dict[str, Any] = {}
        for prop in self.amnesic_tasks:
            name = prop.spec.name
            if prop.data is None:
                out[name] = {"error": prop.error or "no data"}
            else:
                try:
                    out[name], preds = amnesic_property(prop, targets, cache, self.params, before)
                    for task, pair in preds.items():  # beside the task's own, for compare's paired test
                        if task in writer.items:
                            writer.items[task].update({f"amnesic/{name}/{k}/pred": v for k, v in pair.items()})
                except EncoderOutputError:
                    raise
                except Exception as err:  # noqa: BLE001 - one property's failure is recorded; the others run
                    out[name] = {"error": f"{type(err).__name__}: {err}".replace("\n", " ")}
            writer.update(amnesic=dict(out))
            _say(console, amnesic_line(name, out[name]))

    def side_tasks(self, language: str) -> SideTasks:
        """``language``'s probing tasks (those of the suite's tasks, from ``side_probing``) and retrieval pairs,
        loaded once."""
        if language not in self._side_tasks:
            probing = [task.spec.name for task in self.tasks if task.spec.family == "probing"]
            loaded = (load_named_tasks(probing, self.data_dir, probing=self.side_probing, language=language)
                      if probing else [])
            pairs, error, missing = load_retrieval(self.data_dir, language, self.retrieval_held_out,
                                                   self.retrieval_path)
            self._side_tasks[language] = SideTasks(loaded, pairs, error, missing)
        return self._side_tasks[language]

    @staticmethod
    def _description(encoder, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """``given``, else the encoder's own ``describe()``, else its class name."""
        if given is not None:
            return dict(given)
        if isinstance(encoder, TextEncoder):
            return dict(encoder.describe())
        return {"name": type(encoder).__name__}


def _say(console, line: str) -> None:
    if console is not None:
        console.print(line, highlight=False, soft_wrap=True)
