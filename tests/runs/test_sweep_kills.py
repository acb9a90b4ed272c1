"""A sweep killed without a word (SIGKILL: the out-of-memory killer, a lost node) at each moment of a trial's life, on
SQLite, Optuna's journal and PostgreSQL: just after Optuna created the trial (nothing recorded on it yet), while the
job reads its corpus, while the per-epoch suite runs, and while the sweep tells the study how the job ended. Each kill
is driven into its window by the drill's patch (tests/helpers/signal_at.py), not by a sleep. The same command again
neither waits forever nor runs the finished trial twice: the cut trial is failed and its parameters run again."""
from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from sentence_lab.optuna_storage import RETRY_OF, open_storage, storage_url
from tests.helpers import processes
from tests.helpers.in_process import run_command
from tests.helpers.services import postgresql_url
from tests.helpers.train_config import sweep_command

pytestmark = [pytest.mark.slow, pytest.mark.second_part]  # whole sweeps, each killed and run again: CI's second part

ROOT = Path(__file__).resolve().parents[2]
# Where the second trial (trial 1) is cut: the phase, and which call of it (the first trial makes the earlier ones).
WINDOWS = {"trial": ["+hydra.callbacks.signal.nth=2"],
           "load": ["+hydra.callbacks.signal.job=1"],
           "suite": ["+hydra.callbacks.signal.job=1"],
           "results": ["+hydra.callbacks.signal.nth=2"]}


@dataclass(frozen=True)
class Study:
    url: str
    name: str
    overrides: tuple[str, ...]
    heartbeats: bool

    def trials(self) -> list[optuna.trial.FrozenTrial]:
        return optuna.load_study(study_name=self.name, storage=open_storage(self.url)).trials


# Each window on one of the two file storages (the trial window on both: the journal keeps no heartbeats, so it ends
# otherwise), every window on the PostgreSQL server.
CASES = [("sqlite", "trial"), ("journal", "trial"), ("sqlite", "load"), ("journal", "suite"), ("journal", "results"),
         *(pytest.param("postgresql", window, marks=pytest.mark.cluster) for window in WINDOWS)]


@pytest.fixture
def study(request, tmp_path) -> Study:
    if request.param == "sqlite":
        return Study(storage_url(None, tmp_path / "sweep"), "qt_probing", (), True)
    if request.param == "journal":
        journal = tmp_path / "study.journal"
        return Study(storage_url(f"journal:{journal}", tmp_path), "qt_probing",
                     (f"hydra.sweeper.storage='journal:{journal}'",), False)
    url, name = postgresql_url(), f"test_{uuid.uuid4().hex[:12]}"
    return Study(url, name, (f"hydra.sweeper.storage='{url}'", f"hydra.sweeper.study_name={name}"), True)


def _command(tiny_corpus: Path, senteval_root: Path, tmp_path: Path, study: Study, *extra: str) -> list[str]:
    return sweep_command(tiny_corpus, senteval_root, tmp_path, "[Length]", "hparams_search=qt_optuna",
                         "hydra.sweeper.sampler.n_startup_trials=2", "encoder=bow", "trainer.max_epochs=1",
                         "logger=none", "callbacks.eval_suite.probing=xprobe", "hydra.sweeper.n_trials=2",
                         "hydra.sweeper.heartbeat_interval=1", "hydra.sweeper.grace_period=2", *study.overrides, *extra)


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")


@pytest.mark.parametrize("study,window", CASES, indirect=["study"], ids=lambda value: str(value))
def test_a_sweep_killed_in_each_window_leaves_a_study_the_same_command_finishes(window, study, tiny_corpus,
                                                                                senteval_root, tmp_path):
    kill = ["+hydra.callbacks.signal._target_=tests.helpers.signal_at.SignalAtPhase",
            f"+hydra.callbacks.signal.phase={window}", "+hydra.callbacks.signal.signal=SIGKILL", *WINDOWS[window]]
    cmd = _command(tiny_corpus, senteval_root, tmp_path, study)
    killed = processes.run([*cmd, *kill], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    before = study.trials()
    assert before[0].state == TrialState.COMPLETE and before[1].state == TrialState.RUNNING
    cut = before[1]

    started = time.monotonic()
    again = run_command(cmd, cwd=tmp_path, env=_env(), timeout=600)  # in this process: nothing kills it
    waited = time.monotonic() - started
    assert again.returncode == 0, again.stderr[-3000:]
    after = study.trials()
    assert (after[0].state, after[0].value, after[0].params) == (TrialState.COMPLETE, before[0].value,
                                                                 before[0].params)  # kept, never run again
    if window == "trial" and not study.heartbeats:
        # the journal keeps no heartbeats and nothing names the killed sweep on this trial: it cannot be told from
        # one that runs elsewhere, so the next sweep stops at once and says so (it neither waits nor guesses)
        assert [t.state for t in after] == [TrialState.COMPLETE, TrialState.RUNNING] and waited < 120
        assert "this sweep stops here" in again.stdout + again.stderr
        return
    assert after[1].state == TrialState.FAIL
    (rerun,) = after[2:]
    assert rerun.state == TrialState.COMPLETE and rerun.params == cut.params and rerun.user_attrs[RETRY_OF] == 1
    if not study.heartbeats:  # the journal: found by the killed sweep's process, recorded on the trial, having ended
        assert f"trial {cut.number}: the sweep that ran it" in again.stdout + again.stderr and waited < 120


@pytest.mark.cluster
def test_one_of_two_sweeps_on_postgresql_killed_mid_trial_loses_nothing(tiny_corpus, senteval_root, tmp_path):
    """Two sweeps share a study on the PostgreSQL server (two nodes of a cluster, in effect); one is SIGKILLed in its
    trial's suite. The other fails that trial (the killed sweep's process has ended, or its heartbeat stopped) and
    runs its parameters again: every trial the budget asked for finishes, none twice."""
    url, name = postgresql_url(), f"test_{uuid.uuid4().hex[:12]}"
    shared = Study(url, name, (f"hydra.sweeper.storage='{url}'", f"hydra.sweeper.study_name={name}"), True)
    cmd = _command(tiny_corpus, senteval_root, tmp_path, shared, "hydra.sweeper.n_trials=3")
    doomed = processes.start([*cmd, "hydra.sweeper.sampler.seed=1",
                              "+hydra.callbacks.signal._target_=tests.helpers.signal_at.SignalAtPhase",
                              "+hydra.callbacks.signal.phase=suite", "+hydra.callbacks.signal.signal=SIGKILL",
                              "+hydra.callbacks.signal.nth=2"], cwd=tmp_path, env=_env(), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not (tmp_path / "sweep" / "jobs.jsonl").is_file():  # its first trial has begun: start the other
        assert doomed.poll() is None and time.monotonic() < deadline, "the first sweep began no trial"
        time.sleep(0.05)
    survivor = processes.run([*cmd, "hydra.sweeper.sampler.seed=2"], cwd=tmp_path, env=_env(), capture_output=True,
                             text=True, timeout=600)
    doomed.communicate(timeout=600)
    assert doomed.returncode == -signal.SIGKILL
    assert survivor.returncode == 0, survivor.stderr[-3000:]
    trials = shared.trials()
    failed = [t for t in trials if t.state == TrialState.FAIL]
    # (two sweeps that count the same free place at once may each take it: at most one trial more)
    assert len(failed) == 1 and 3 <= sum(t.state == TrialState.COMPLETE for t in trials) <= 4
    (rerun,) = [t for t in trials if t.user_attrs.get(RETRY_OF) == failed[0].number]
    assert rerun.state == TrialState.COMPLETE and rerun.params == failed[0].params
