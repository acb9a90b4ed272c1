"""Multirun bookkeeping: a job that fails is recorded and the sweep goes on; the sweep then fails naming it. And
what a sweep does once all its jobs are done (evaluating the concatenation of its models)."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, read_write

from sentence_lab.runs.errors import RunInterrupted, one_line, report
from sentence_lab.stop_signals import Stopped, signals_held, stops_raise
from sentence_lab.text.files import atomic_write_text

log = logging.getLogger(__name__)

FAILED_JOBS = "failed_jobs.jsonl"
INTERRUPTED_JOBS = "interrupted_jobs.jsonl"  # failed_jobs.jsonl's lines of jobs an Optuna sweep ran again
JOBS = "jobs.jsonl"  # every job's start and end, in the sweep directory: a job that started and never ended was killed


def _append_line(path: Path, line: str) -> None:
    """One JSON line appended in a single write (jobs of a parallel launcher may finish together)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (line + "\n").encode("utf-8"))
    finally:
        os.close(fd)


def record_failed_job(sweep_dir: Path, job: int, overrides: list[str], error: str, job_dir: Path | None) -> None:
    """A line of the sweep's ``failed_jobs.jsonl`` naming the job and how it ended."""
    _append_line(Path(sweep_dir) / FAILED_JOBS, json.dumps(
        {"job": job, "overrides": list(overrides), "error": error, "dir": str(job_dir) if job_dir else None}))


def _record_failure(hydra_cfg: DictConfig, err: BaseException) -> None:
    """``<job dir>/error.txt`` and a line of the sweep's ``failed_jobs.jsonl`` naming the job and its error."""
    job_dir = Path(hydra_cfg.runtime.output_dir)
    overrides = list(hydra_cfg.overrides.task)
    log.error("job %s (%s) failed: %s", hydra_cfg.job.num, " ".join(overrides), one_line(err))
    job_dir.mkdir(parents=True, exist_ok=True)
    (job_dir / "error.txt").write_text("".join(traceback.format_exception(err)), encoding="utf-8")
    record_failed_job(Path(hydra_cfg.sweep.dir), int(hydra_cfg.job.num), overrides, one_line(err), job_dir)


def slurm_job_id() -> str:
    """This SLURM job's id as ``scancel``, ``sacct`` and ``squeue`` take it: ``<array>_<task>`` for a task of an array
    job (a sweep's), else ``SLURM_JOB_ID``."""
    array, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    return f"{array}_{task}" if array and task else os.environ.get("SLURM_JOB_ID", "")


def restarted_by_slurm() -> int:
    """How many times SLURM has started this job again (``SLURM_RESTART_COUNT``: a requeue, a pre-emption, a node
    lost); 0 for a first start or outside SLURM."""
    try:
        return int(os.environ.get("SLURM_RESTART_COUNT") or 0)
    except ValueError:
        return 0


def _record_event(hydra_cfg: DictConfig, event: str, outcome: str | None = None) -> None:
    """A line of the sweep's ``jobs.jsonl``: this job ``started`` or ``ended``, with its outcome (``complete``,
    ``pruned``: an Optuna sweep stopped it early, ``failed``, ``interrupted``); in a SLURM job, its job id
    (``slurm_job_id``) and how many times SLURM started it again (``slurm_restarts``)."""
    entry: dict[str, object] = {"job": int(hydra_cfg.job.num), "event": event, "pid": os.getpid(),
                                "dir": str(hydra_cfg.runtime.output_dir)}
    if os.environ.get("SLURM_JOB_ID"):
        entry["slurm_job_id"] = slurm_job_id()
        entry["slurm_restarts"] = restarted_by_slurm()
    if outcome is not None:
        entry["outcome"] = outcome
    _append_line(Path(hydra_cfg.sweep.dir) / JOBS, json.dumps(entry))


def run_outcome(cfg: DictConfig) -> str:
    """``pruned`` when the run's ``run_status.json`` says a pruner stopped it, else ``complete``."""
    status_file = Path(str(cfg.paths.output_dir)) / "run_status.json" if cfg.get("paths") else None
    try:
        stopped_by = json.loads(status_file.read_text(encoding="utf-8")).get("stopped_by") if status_file else None
    except (OSError, ValueError):
        stopped_by = None
    return "pruned" if stopped_by == "pruned" else "complete"


@contextmanager
def argv_of_this_job(hydra_cfg: DictConfig) -> Iterator[None]:
    """While the job runs, ``sys.argv`` is this job's own command and Hydra's ``run.dir`` its directory: Lightning
    starts the other ranks of a DDP run with ``sys.argv`` and ``hydra.run.dir`` (``_hydra_subprocess_cmd``). The
    sweep's command line (``-m``, the sweeper) would start a sweep in every rank, each sampling other parameters
    (lightning-hydra-template issue 639), and a multirun's ``run.dir`` is a new directory under ``runs/``. With the
    job's overrides, ``hydra.mode=RUN`` and the job's directory every rank trains this job, in its directory."""
    saved_argv = list(sys.argv)
    sys.argv[1:] = [*hydra_cfg.overrides.task, "hydra.mode=RUN"]
    run = cast(DictConfig, HydraConfig.get().run)
    saved_dir = cast(dict, OmegaConf.to_container(run, resolve=False))["dir"]  # unresolved: ${unique_dir:...}
    with read_write(run):
        run.dir = str(hydra_cfg.runtime.output_dir)
    try:
        yield
    finally:
        sys.argv[:] = saved_argv
        with read_write(run):
            run.dir = saved_dir


def job_events(sweep_dir: Path) -> dict[int, dict[str, dict]]:
    """Each job's recorded events (``started``, ``ended``) from the sweep's ``jobs.jsonl``."""
    path = Path(sweep_dir) / JOBS
    events: dict[int, dict[str, dict]] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    for line in filter(None, map(str.strip, lines)):
        entry = json.loads(line)
        events.setdefault(int(entry["job"]), {})[entry["event"]] = entry
    return events


def record_lost_jobs(sweep: Path, first: int, job_overrides: Sequence[Sequence[str]], cause: str) -> list[int]:
    """Record in ``failed_jobs.jsonl`` every job of a batch that did not end; returns their numbers."""
    events = job_events(sweep)
    lost = []
    for number, overrides in enumerate(job_overrides, start=first):
        seen = events.get(number, {})
        if "ended" in seen:
            continue
        if "started" in seen:
            error = ("did not end: its worker process was killed (the out-of-memory killer?), "
                     "or joblib stopped it when "
                     f"another worker was: {cause}")
        else:
            error = "not run: the sweep's worker pool broke before this job started"
        job_dir = Path(seen["started"]["dir"]) if "started" in seen else None
        record_failed_job(sweep, number, list(overrides), error, job_dir)
        log.error("job %d (%s): %s", number, " ".join(overrides), error)
        lost.append(number)
    return lost


def set_aside_failures(sweep_dir: Path, jobs: set[int]) -> list[int]:
    """Move the ``failed_jobs.jsonl`` lines of ``jobs`` (interrupted jobs that an Optuna sweep runs again) to
    ``interrupted_jobs.jsonl``: the sweep that goes on fails only for what fails in it. Returns the jobs moved."""
    path = Path(sweep_dir) / FAILED_JOBS
    if not jobs or not path.is_file():
        return []
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    moved = [line for line in lines if json.loads(line)["job"] in jobs]
    if not moved:
        return []
    for line in moved:
        _append_line(Path(sweep_dir) / INTERRUPTED_JOBS, line)
    kept = [line for line in lines if line not in moved]
    if kept:
        atomic_write_text(path, "\n".join(kept) + "\n")
    else:
        path.unlink()
    return [json.loads(line)["job"] for line in moved]


def failed_jobs_message(sweep_dir: Path) -> str | None:
    """The sweep's last line when jobs failed (naming each and how it ended), else None."""
    path = Path(sweep_dir) / FAILED_JOBS
    if not path.is_file():
        return None
    failed = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    names = "; ".join(f"#{f['job']} ({' '.join(f['overrides'])}): {f['error']}" for f in failed)
    return (f"{len(failed)} job(s) of the multirun failed (the others finished): {names}. "
            f"Details: {path} and each job's error.txt")


def run_job(cfg: DictConfig, task: Callable[[DictConfig], Any]) -> Any:
    """``task(cfg)``, ending the way ``sentence_lab.runs.errors`` describes: an error is one line on stderr with its
    traceback
    in the run's log (``show_traceback=true`` raises it as Python would) and exit code 1; a run stopped by a signal
    exits 128 + N. In a multirun a failed job is also written to ``<job dir>/error.txt`` and the sweep's
    ``failed_jobs.jsonl``, and the next job runs; a signal stops the sweep too."""
    hydra_cfg = cast(DictConfig, HydraConfig.get()) if HydraConfig.initialized() else None
    if hydra_cfg is None or hydra_cfg.mode != RunMode.MULTIRUN:
        with stops_raise():
            return _run(cfg, task)[0]
    _record_event(hydra_cfg, "started")
    outcome = "interrupted"
    try:
        with argv_of_this_job(hydra_cfg), stops_raise():
            value, failed = _run(cfg, task, hydra_cfg)
        outcome = "failed" if failed else run_outcome(cfg)
        return value
    except Exception:  # show_traceback=true raises it
        outcome = "failed"
        raise
    finally:
        _record_event(hydra_cfg, "ended", outcome)


def _run(cfg: DictConfig, task: Callable[[DictConfig], Any], hydra_cfg: DictConfig | None = None) -> tuple[Any, bool]:
    """(``task(cfg)``, False), or (None, True) for a recorded failure in a multirun (``hydra_cfg`` set); see
    ``run_job`` for the other endings."""
    try:
        return task(cfg), False
    except (RunInterrupted, Stopped) as caught:
        stop = caught if isinstance(caught, RunInterrupted) else \
            RunInterrupted(caught.signum, None, Path(str(cfg.paths.output_dir)))  # after training: its checkpoints stay
        with signals_held():  # a second signal waits for the record of the first
            if hydra_cfg is not None:
                _record_failure(hydra_cfg, stop)
            report(stop)
        raise SystemExit(stop.exit_code) from None
    except Exception as err:
        if cfg.get("show_traceback"):
            raise
        report(err)
        if hydra_cfg is not None:
            _record_failure(hydra_cfg, err)
            return None, True
        raise SystemExit(1) from None


class FailOnFailedJobs(Callback):
    """At the end of a multirun, exit non-zero naming the jobs that failed (``failed_jobs.jsonl``)."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        message = failed_jobs_message(Path(config.hydra.sweep.dir))
        if message:
            raise SystemExit(message)


class EvaluateConcatenation(Callback):
    """At the end of a multirun, ``evaluate.py`` on the concatenation of its jobs' sentence vectors, in job order
    (MC-QT and combine-QT, Logeswaran & Lee 2018, 4.4.1; skip-thought's combine-skip, Kiros et al. 2015: models
    trained separately, concatenated at test time). Results: ``<sweep dir>/concatenation/results.json`` (+ ``.md``);
    with ``with_init``, also the concatenation of the jobs' ``init.ckpt`` (the same vector at initialisation, its
    epoch 0) in ``<sweep dir>/concatenation_init/``."""

    def __init__(self, tasks: list[str] | str = "all", overrides: list[str] | None = None,
                 with_init: bool = False) -> None:
        self.tasks = [tasks] if isinstance(tasks, str) else list(tasks)
        self.overrides = list(overrides or [])
        self.with_init = with_init

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep = Path(config.hydra.sweep.dir)
        runs = sorted((p for p in sweep.iterdir() if p.name.isdigit() and (p / "checkpoints").is_dir()),
                      key=lambda p: int(p.name))
        if len(runs) < 2:
            raise SystemExit(f"evaluating the concatenation needs two or more trained runs under {sweep}, found "
                             f"{len(runs)}: run the sweep with -m over two models (e.g. +mcqt_model=fixed,scratch)")
        self._evaluate(config, runs, sweep / "concatenation")
        if self.with_init:
            inits = [run / "checkpoints" / "init.ckpt" for run in runs]
            missing = [str(p) for p in inits if not p.is_file()]
            if missing:
                raise SystemExit(f"{', '.join(missing)} missing: the runs were made without the init checkpoint "
                                 "callback; set with_init: false")
            self._evaluate(config, inits, sweep / "concatenation_init")

    def _evaluate(self, config: DictConfig, sources: list[Path], out: Path) -> None:
        command = [sys.executable, "-m", "sentence_lab.cli.evaluate",
                   "ckpt_path=[" + ",".join(f"'{source}'" for source in sources) + "]",
                   "tasks=[" + ",".join(self.tasks) + "]", f"results_file='{out / 'results.json'}'",
                   f"hydra.run.dir='{out}'", *self.overrides]
        log.info("evaluating the concatenation of %s: %s", ", ".join(str(s) for s in sources), " ".join(command))
        code = subprocess.run(command, check=False).returncode
        if code:
            raise SystemExit(f"evaluating the concatenation of {', '.join(map(str, sources))} failed (exit {code}): "
                             f"see {out} (the trained runs are kept)")
