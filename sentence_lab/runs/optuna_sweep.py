"""Optuna sweeps whose trials prune themselves, whose study outlives the process, and that share a study safely
(``hydra/sweeper=optuna``; ``conf/hparams_search/``; docs/sweeps.md).

The sweeper asks Optuna for a batch of trials, launches them as the multirun's jobs through whatever launcher the
config names (in-process, joblib, SLURM), and tells Optuna how each ended. The trial travels to its job as three
overrides (``optuna_trial.storage``, ``.study_name``, ``.id``): the job opens the same study in the same storage and
reports its per-epoch scores there (``sentence_lab.runs.trial_pruning``), so the pruner sees every trial's curve
whichever process or node ran it. A job's number is its trial's number (``<sweep dir>/<number>/``).

The study lives in ``storage`` (default ``sqlite:///<sweep dir>/optuna.db``; any SQLAlchemy URL; or
``journal:<file>``, Optuna's journal file, safe on a network filesystem). Run the same command again and the sweep
goes on where it stopped: finished trials are kept and never repeated; a trial cut by a signal (SIGTERM, SIGINT, in
any phase: ``sentence_lab.stop_signals``) is failed with ``interrupted_by`` and run again with the same
parameters; one whose sweep died without a word (SIGKILL, a lost node) is found, on the sweep's own host, by its
recorded process having ended (``OWNER``), else by its missing heartbeat (database storages), and run again
the same way. Two sweeps on one storage share the study: each
asks only for the trials the budget (``n_trials`` finished) still allows.
"""
from __future__ import annotations

import logging
import math
import re
import signal
import threading
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import optuna
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, Override, RangeSweep
from hydra.core.plugins import Plugins
from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.storages import BaseStorage, RDBStorage
from optuna.trial import FrozenTrial, TrialState

from sentence_lab.optuna_storage import (
    ATTEMPT,
    INTERRUPTED_BY,
    PRUNED_AT,
    RETRY_OF,
    StorageUnavailable,
    open_storage,
    shown_url,
    storage_url,
    write_study_record,
)
from sentence_lab.runs.process_record import has_ended, this_process
from sentence_lab.runs.sweeps import set_aside_failures
from sentence_lab.stop_signals import Stopped, signals_held, stops_raise

log = logging.getLogger(__name__)

RESULTS_FILE = "optimization_results.yaml"
# The trial attribute naming the sweep process that runs it (``runs.process_record``): a sweep on the same host fails
# at once a running trial whose sweep has ended, and runs its parameters again.
OWNER = "sweep_process"
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


# ---- the search space ------------------------------------------------------------------------------------------
def distribution_of(override: Override) -> BaseDistribution | None:
    """The Optuna distribution of a sweep override (``choice(...)``, ``range(...)``, ``interval(...)``, with
    ``tag(log, ...)`` for a log scale); None for a plain value."""
    if not override.is_sweep_override():
        return None
    value = override.value()
    log_scale = "log" in getattr(value, "tags", set())
    if isinstance(value, ChoiceSweep):
        return CategoricalDistribution([v for v in override.sweep_iterator(transformer=lambda x: x)])
    if isinstance(value, RangeSweep):
        start, stop, step = value.start, value.stop, value.step
        if isinstance(start, int) and isinstance(stop, int) and isinstance(step, int):
            return IntDistribution(start, stop - 1, step=step, log=log_scale and step == 1)
        return CategoricalDistribution(list(override.sweep_iterator(transformer=lambda x: x)))
    if isinstance(value, IntervalSweep):
        low, high = value.start, value.end
        assert low is not None and high is not None, "Hydra's interval() has both ends"
        if isinstance(low, int) and isinstance(high, int):
            return IntDistribution(low, high, log=log_scale)
        return FloatDistribution(float(low), float(high), log=log_scale)
    raise ValueError(f"{override.input_line}: Optuna sweeps take choice(...), range(...) or interval(...) "
                     "(optionally tag(log, interval(...)))")


def search_space(params: Mapping[str, Any] | None, arguments: Sequence[str]) -> tuple[dict[str, BaseDistribution],
                                                                                        list[str]]:
    """The distributions to sample and the fixed overrides every trial takes: the sweeper's ``params`` first,
    then the command line's overrides (a sweep override there adds or replaces a parameter)."""
    parser = OverridesParser.create()
    lines = [f"{key}={value}" for key, value in (params or {}).items()] + list(arguments)
    space: dict[str, BaseDistribution] = {}
    fixed: dict[str, str] = {}
    for override in parser.parse_overrides(lines):
        key = str(override.get_key_element())
        distribution = distribution_of(override)
        if distribution is None:
            space.pop(key, None)
            fixed[key] = str(override.input_line)
        else:
            fixed.pop(key, None)
            space[key] = distribution
    return space, list(fixed.values())


def _as_override(key: str, value: Any) -> str:
    """``key=value`` that Hydra reads back as ``value``: a string bare where Hydra reads it as itself
    (``encoder=gru`` stays a config group choice), quoted where it would read another type (``'7'``, ``'true'``)."""
    if not isinstance(value, str):
        return f"{key}={value}"
    bare = f"{key}={value}"
    try:
        (parsed,) = OverridesParser.create().parse_overrides([bare])
        if parsed.value() == value and isinstance(parsed.value(), str):
            return bare
    except Exception:  # noqa: BLE001 - Hydra's grammar does not read it bare: quote it
        pass
    return f"{key}={value!r}"


def trial_overrides(params: Mapping[str, Any]) -> list[str]:
    """``key=value`` overrides for a trial's sampled parameters, each read back by Hydra as sampled."""
    return [_as_override(key, value) for key, value in params.items()]


# ---- the trials ------------------------------------------------------------------------------------------------
MAX_ATTEMPTS = 3  # an interrupted trial runs at most this many times: a trial that kills its sweep is no loop


def retry(study: optuna.Study, trial: FrozenTrial) -> None:
    """Queue an interrupted trial's parameters again (the next trial asked for takes them), unless it was the
    ``MAX_ATTEMPTS``-th run of them."""
    attempt = int(trial.user_attrs.get(ATTEMPT, 1))
    if attempt >= MAX_ATTEMPTS:
        log.error("trial %d was interrupted, the %d-th run of its parameters: not queued again", trial.number, attempt)
        return
    study.enqueue_trial(dict(trial.params), user_attrs={RETRY_OF: trial.number, ATTEMPT: attempt + 1})
    log.warning("trial %d was interrupted: queued again with the same parameters", trial.number)


def fail_dead_owners(study: optuna.Study) -> None:
    """Fail, and queue again, every running trial whose sweep process is known to have ended (``OWNER``)."""
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if has_ended(trial.user_attrs.get(OWNER)):
            log.warning("trial %d: the sweep that ran it (%s) has ended", trial.number, trial.user_attrs[OWNER])
            retry(study, study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True))


def counted(trials: Sequence[FrozenTrial]) -> tuple[int, int]:
    """(finished trials that count towards ``n_trials``, trials running now). An interrupted trial that was
    queued again does not count: its re-run does."""
    retried = {t.user_attrs.get(RETRY_OF) for t in trials}
    done = sum(1 for t in trials if t.state in FINISHED and not (t.state == TrialState.FAIL and t.number in retried))
    running = sum(1 for t in trials if t.state == TrialState.RUNNING)
    return done, running


def consecutive_groups(trials: Sequence[optuna.Trial]) -> Iterator[list[optuna.Trial]]:
    """The batch split where trial numbers jump (another sweep took the numbers between): one launch each, so
    that every job's number is its trial's."""
    group: list[optuna.Trial] = []
    for trial in trials:
        if group and trial.number != group[-1].number + 1:
            yield group
            group = []
        group.append(trial)
    if group:
        yield group


def has_heartbeats(storage: BaseStorage) -> bool:
    """Whether the storage keeps trials' heartbeats (an RDB storage opened with ``heartbeat_interval``)."""
    return isinstance(storage, RDBStorage) and storage.get_heartbeat_interval() is not None


def beat_once(storage: BaseStorage, trials: Sequence[FrozenTrial], seen: set[int]) -> None:
    """One heartbeat for each running trial of ``trials`` not in ``seen`` (then added to it). A sweep killed between
    creating a trial and its first heartbeat leaves a trial that Optuna never finds stale (it has no heartbeat to age),
    and every later sweep of the study would wait for it forever; beaten once here, it is failed as stale (and queued
    again) ``grace_period`` later unless its own sweep beats it, as a live sweep does."""
    for trial in trials:
        if trial.state == TrialState.RUNNING and trial._trial_id not in seen:
            storage.record_heartbeat(trial._trial_id)
            seen.add(trial._trial_id)


@contextmanager
def heartbeats(storage: BaseStorage, trials: Sequence[optuna.Trial], interval: int | None) -> Iterator[None]:
    """While the batch runs, the storage hears from each of its trials every ``interval`` seconds (a sweep that
    dies silently leaves trials whose heartbeat stops: the next sweep on the study fails and re-runs them)."""
    if not interval or not has_heartbeats(storage):
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        while True:
            for trial in trials:
                try:
                    storage.record_heartbeat(trial._trial_id)
                except Exception as err:  # noqa: BLE001 - a missed beat is no reason to stop the sweep
                    log.debug("heartbeat of trial %d: %s", trial.number, err)
            if stop.wait(interval):
                return

    thread = threading.Thread(target=beat, name="optuna-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def stopping_signal(err: BaseException) -> str | None:
    """The signal's name when ``err`` is a stop: ``Stopped`` in this process, a job's ``SystemExit(128 + N)``, a
    ``KeyboardInterrupt``, or a launcher's error for a job in another process that a signal stopped (its stderr, which
    submitit quotes, holds the run's line "stopped by SIGTERM"); else None."""
    if isinstance(err, Stopped):
        return signal.Signals(err.signum).name
    if isinstance(err, SystemExit) and isinstance(err.code, int) and err.code > 128:
        try:
            return signal.Signals(err.code - 128).name
        except ValueError:
            return None
    if isinstance(err, KeyboardInterrupt):
        return "SIGINT"
    said = str(err) if isinstance(err, Exception) else ""
    quoted = re.search(r"error: stopped by (SIGTERM|SIGINT|SIGUSR2)\b", said)
    return quoted.group(1) if quoted else None


def job_values(ret: JobReturn) -> list[float] | None:
    """The values a job returned (one per objective), None when it failed or returned none or a non-finite one."""
    if ret.status != JobStatus.COMPLETED:
        return None
    value = ret.return_value
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not values or any(v is None or not math.isfinite(float(v)) for v in values):
        return None
    return [float(v) for v in values]


def results_document(study: optuna.Study) -> dict[str, Any]:
    """``optimization_results.yaml``: the best parameters and value (one objective) or the Pareto front."""
    doc: dict[str, Any] = {"name": "optuna", "study_name": study.study_name}
    complete = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
    if not complete:
        return doc | {"best_params": None, "note": "no trial completed"}
    if len(study.directions) == 1:
        best = study.best_trial
        return doc | {"best_trial": best.number, "best_params": dict(best.params), "best_value": best.value}
    return doc | {"solutions": [{"trial": t.number, "params": dict(t.params), "values": list(t.values)}
                                for t in study.best_trials]}


# ---- the sweeper -----------------------------------------------------------------------------------------------
def build_sampler(config: Any, trials_so_far: int) -> optuna.samplers.BaseSampler | None:
    """The sampler its config names, its ``seed`` moved on by the trials the study already holds: a sweep that goes
    on proposes what a seeded sampler would next, not its first proposals again (a fresh study: ``seed`` itself)."""
    if config is None or isinstance(config, optuna.samplers.BaseSampler):
        return config
    seed = config.get("seed")
    return instantiate(config, **({"seed": int(seed) + trials_so_far} if seed is not None else {}))


def optimized_names(config: DictConfig) -> list[str]:
    """The metric(s) a trial returns: ``optimized_metric``, one name or a list (default ``monitor``)."""
    names = config.get("optimized_metric") or config.get("monitor")
    return [str(names)] if isinstance(names, str) or names is None else [str(n) for n in names]


class PruningOptunaSweeper(Sweeper):
    """Hydra sweeper over Optuna (``hydra_plugins.sentence_lab.optuna_sweeper.OptunaSweeper``): see the module.
    ``sampler`` and ``pruner`` come as configs (``_recursive_: false``) or objects."""

    def __init__(self, sampler: Any = None, pruner: Any = None, direction: str | Sequence[str] = "maximize",
                 storage: str | None = None, study_name: str | None = None, n_trials: int = 20, n_jobs: int = 1,
                 params: Mapping[str, Any] | None = None, heartbeat_interval: int | None = 60,
                 grace_period: int | None = 180) -> None:
        self.sampler_config = sampler
        self.pruner = (pruner if isinstance(pruner, optuna.pruners.BasePruner) or pruner is None
                       else instantiate(pruner)) or optuna.pruners.NopPruner()
        self.directions = [direction] if isinstance(direction, str) else list(direction)
        self.storage = storage
        self.study_name = study_name
        self.n_trials = int(n_trials)
        self.n_jobs = max(1, int(n_jobs))
        self.params = dict(params or {})
        self.heartbeat_interval = heartbeat_interval
        self.grace_period = grace_period
        self.config: DictConfig | None = None
        self.launcher = None
        self.hydra_context: HydraContext | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.launcher = Plugins.instance().instantiate_launcher(hydra_context=hydra_context,
                                                                task_function=task_function, config=config)

    def check(self) -> None:
        """What would only fail after every trial trained: one metric per direction; pruning one objective."""
        assert self.config is not None
        names = optimized_names(self.config)
        if len(names) != len(self.directions):
            raise ValueError(f"optimized_metric names {len(names)} metric(s) ({', '.join(names)}) and "
                             f"hydra.sweeper.direction {len(self.directions)}: give one direction per metric")
        if len(self.directions) > 1 and not isinstance(self.pruner, optuna.pruners.NopPruner):
            raise ValueError(f"{len(self.directions)} objectives and pruner {type(self.pruner).__name__}: Optuna "
                             "prunes single-objective studies only; set hydra/sweeper/pruner=none")

    def open_study(self, sweep_dir: Path) -> tuple[optuna.Study, BaseStorage, str]:
        """The study, created or loaded (the same command run again goes on with it)."""
        url = storage_url(self.storage, sweep_dir)
        storage = open_storage(url, self.heartbeat_interval, self.grace_period, on_stale=retry)
        study = optuna.create_study(storage=storage, study_name=self.study_name, pruner=self.pruner,
                                    directions=self.directions, load_if_exists=True)
        wanted = [optuna.study.StudyDirection[d.upper()] for d in self.directions]
        if list(study.directions) != wanted:
            raise ValueError(f"study {study.study_name} in {url} has directions "
                             f"{[d.name.lower() for d in study.directions]}, the sweep asks for {self.directions}: "
                             "use another hydra.sweeper.study_name (or storage) for a new study")
        study.sampler = build_sampler(self.sampler_config, len(study.get_trials(deepcopy=False))) or study.sampler
        return study, storage, url

    def sweep(self, arguments: list[str]) -> list[Sequence[JobReturn]]:
        assert self.config is not None and self.launcher is not None
        self.check()
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")
        space, fixed = search_space(self.params, arguments)
        try:
            study, storage, url = self.open_study(sweep_dir)
        except StorageUnavailable as err:  # before any job: one line, exit 1
            raise SystemExit(f"error: {err}") from None
        write_study_record(sweep_dir, url, study.study_name)
        trials = study.get_trials(deepcopy=False)  # jobs an earlier command had interrupted run again here:
        set_aside_failures(sweep_dir, {t.user_attrs[RETRY_OF] for t in trials if RETRY_OF in t.user_attrs})
        log.info("Optuna study %s in %s (%d trial(s) there): %d trial(s) of %s, %s, in batches of %d; pruner %s; "
                 "parameters %s", study.study_name, shown_url(url), len(trials), self.n_trials,
                 ", ".join(optimized_names(self.config)), "/".join(self.directions), self.n_jobs,
                 type(self.pruner).__name__, ", ".join(space) or "none")
        with stops_raise():
            try:
                returns = self.run_trials(study, storage, space, fixed, url)
            except Stopped as stop:  # between trials: none was cut
                log.error("the sweep was stopped by %s between trials: the same command goes on with it", stop)
                raise SystemExit(stop.exit_code) from None
        self.write_results(study, sweep_dir)
        return returns

    def run_trials(self, study: optuna.Study, storage: BaseStorage, space: dict[str, BaseDistribution],
                   fixed: list[str], url: str) -> list[Sequence[JobReturn]]:
        """Batches of trials until the study holds ``n_trials`` finished ones (or the rest run elsewhere)."""
        returns: list[Sequence[JobReturn]] = []
        waited_for_others = False
        seen: set[int] = set()
        beating = has_heartbeats(storage)
        while True:
            if beating:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                    optuna.storages.fail_stale_trials(study)
            fail_dead_owners(study)
            trials = study.get_trials(deepcopy=False)
            if beating:
                beat_once(storage, trials, seen)
            done, running = counted(trials)
            room = self.n_trials - done - running
            if room <= 0:
                if running and done < self.n_trials and beating:
                    if not waited_for_others:
                        log.info("%d trial(s) of the study run elsewhere (another sweep, or a killed one whose "
                                 "heartbeat stops within %ss): waiting", running, self.grace_period)
                        waited_for_others = True
                    time.sleep(max(1, min(self.heartbeat_interval or 10, 10)))
                    continue
                if running and done < self.n_trials:
                    log.warning("%d trial(s) of the study are marked running by another sweep (journal "
                                "storage: no heartbeat to tell a dead one): this sweep stops here", running)
                break
            returns.append(self.run_batch(study, storage, min(self.n_jobs, room), space, fixed, url))
        return returns

    def ask(self, study: optuna.Study, storage: BaseStorage, space: dict[str, BaseDistribution]) -> optuna.Trial:
        """A trial, its heartbeat recorded at once (a sweep killed now leaves no trial the next cannot see)."""
        with warnings.catch_warnings():  # Optuna wants heartbeats with Study.optimize; ask-and-tell beats them here
            warnings.filterwarnings("ignore", message="Heartbeat of storage")
            trial = study.ask(space)
        storage.set_trial_user_attr(trial._trial_id, OWNER, this_process())
        if has_heartbeats(storage):
            storage.record_heartbeat(trial._trial_id)
        return trial

    def run_batch(self, study: optuna.Study, storage: BaseStorage, size: int, space: dict[str, BaseDistribution],
                  fixed: list[str], url: str) -> list[JobReturn]:
        """Ask for ``size`` trials, launch them as jobs (numbered as the trials) and tell Optuna how each ended. A
        batch that cannot compose fails its trials; one the launcher gives up on (a signal, a dead worker or node)
        fails the unfinished ones and queues them again, then the sweep stops."""
        batch: list[optuna.Trial] = []
        results: list[JobReturn] = []
        told: set[int] = set()
        try:
            for _ in range(size):
                batch.append(self.ask(study, storage, space))
            groups = [(group, [tuple(fixed + trial_overrides(t.params) + [
                f"optuna_trial.storage='{url}'", f"optuna_trial.study_name='{study.study_name}'",
                f"optuna_trial.id={t._trial_id}"]) for t in group]) for group in consecutive_groups(batch)]
        except BaseException:
            self.give_up(study, storage, batch, told, queue_again=True)
            raise
        try:
            for _, overrides in groups:
                self.validate_batch_is_legal(overrides)
        except Exception:
            self.give_up(study, storage, batch, told, queue_again=False)
            raise
        try:
            with heartbeats(storage, batch, self.heartbeat_interval):
                for group, overrides in groups:
                    assert self.launcher is not None, "setup() gives the sweeper its launcher"
                    group_returns = self.launcher.launch(overrides, initial_job_idx=group[0].number)
                    for trial, ret in zip(group, group_returns):
                        self.tell(study, storage, trial, ret)
                        told.add(trial.number)
                    results.extend(group_returns)
        except BaseException as err:
            stopped_by = stopping_signal(err)
            with signals_held():  # a second signal waits until the cut trials are recorded and queued again
                self.give_up(study, storage, batch, told, queue_again=True, interrupted_by=stopped_by)
            if stopped_by and isinstance(err, Exception):  # a job elsewhere was stopped: the sweep stops as it did
                log.error("a job of the batch was stopped by %s: the sweep stops; the same command runs it again",
                          stopped_by)
                raise SystemExit(128 + signal.Signals[stopped_by]) from None
            raise
        return results

    def give_up(self, study: optuna.Study, storage: BaseStorage, batch: list[optuna.Trial], told: set[int],
                queue_again: bool, interrupted_by: str | None = None) -> None:
        """The batch's trials not yet told: pruned if their job said so, else failed (and queued again);
        ``interrupted_by``: the stop signal that cut them, kept as the trial's ``interrupted_by`` attribute."""
        for trial in batch:
            if trial.number in told or storage.get_trial(trial._trial_id).state.is_finished():
                continue  # told here, or failed elsewhere as stale (and queued again there)
            if PRUNED_AT in storage.get_trial(trial._trial_id).user_attrs:
                study.tell(trial, state=TrialState.PRUNED, skip_if_finished=True)
                continue
            if interrupted_by:
                storage.set_trial_user_attr(trial._trial_id, INTERRUPTED_BY, interrupted_by)
            frozen = study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
            if queue_again:
                retry(study, frozen)

    def tell(self, study: optuna.Study, storage: BaseStorage, trial: optuna.Trial, ret: JobReturn) -> None:
        """Complete (its values), pruned (its job set ``pruned_at_epoch``) or failed (no finite value). A trial
        another sweep already failed as stale stays as it is."""
        attrs = storage.get_trial(trial._trial_id).user_attrs
        if PRUNED_AT in attrs:
            study.tell(trial, state=TrialState.PRUNED, skip_if_finished=True)
            log.info("trial %d pruned after epoch %s", trial.number, attrs[PRUNED_AT])
            return
        values = job_values(ret)
        if values is None or len(values) != len(study.directions):
            study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
            log.warning("trial %d failed (no finite %s): recorded as failed", trial.number,
                        ", ".join(optimized_names(self.config)) if self.config is not None else "value")
            return
        study.tell(trial, values, skip_if_finished=True)

    def write_results(self, study: optuna.Study, sweep_dir: Path) -> None:
        doc = results_document(study)
        OmegaConf.save(OmegaConf.create(doc), sweep_dir / RESULTS_FILE)
        if "best_value" in doc:
            log.info("best trial %d: %s = %s with %s", doc["best_trial"],
                     ", ".join(optimized_names(self.config)) if self.config is not None else "value",
                     doc["best_value"], doc["best_params"])
        elif "solutions" in doc:
            log.info("Pareto front: %d trial(s): %s", len(doc["solutions"]),
                     ", ".join(str(s["trial"]) for s in doc["solutions"]))
