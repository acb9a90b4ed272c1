"""A stop signal ends a run or a sweep within seconds in every phase and is never taken for a failure
(sentence_lab.stop_signals): each phase is hit at the moment it starts (tests/helpers/signal_at.py)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from contextlib import nullcontext
from pathlib import Path

import optuna
import pytest
import torch
from optuna.trial import TrialState

from sentence_lab.checkpoints.files import CheckpointWriteError, atomic_torch_save
from sentence_lab.optuna_storage import INTERRUPTED_BY, RETRY_OF, storage_url
from sentence_lab.runs.sweeps import FAILED_JOBS
from sentence_lab.stop_signals import Stopped, signals_held, stops_raise
from tests.helpers import processes
from tests.helpers.in_process import run_command
from tests.helpers.train_config import sweep_command

ROOT = Path(__file__).resolve().parents[1]
WITHIN_S = 10.0  # from the signal to the process's end


# ---- in this process ---------------------------------------------------------------------------------------------
def test_inside_stops_raise_a_signal_raises_stopped_and_the_handlers_come_back():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Stopped) as stopped, stops_raise():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # never reached: the handler raises at once
    assert stopped.value.signum == signal.SIGTERM and stopped.value.exit_code == 143
    assert not isinstance(stopped.value, Exception)  # no `except Exception` records it as a failure
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_signal_the_process_ignores_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with stops_raise():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_held_signal_is_delivered_once_after_the_block():
    done = []
    with pytest.raises(Stopped), stops_raise():
        with signals_held():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            done.append("the write ended")
    assert done == ["the write ended"]


@pytest.mark.parametrize("handler", ["stopped", "system_exit"])
def test_a_checkpoint_write_a_signal_hits_ends_whole_and_is_no_disk_error(tmp_path, monkeypatch, handler):
    """The issue's case: SIGTERM inside torch.save's writer. Before, the exception raised there became torch's
    RuntimeError and the write was reported as a full disk; the sweep's handler then raised SystemExit(143)."""
    original = torch.save

    class SignalOnWrite:
        def __init__(self, f):
            self.f = f

        def write(self, data):
            os.kill(os.getpid(), signal.SIGTERM)
            return self.f.write(data)

        def __getattr__(self, name):
            return getattr(self.f, name)

    monkeypatch.setattr(torch, "save", lambda obj, f: original(obj, SignalOnWrite(f)))
    expected = Stopped if handler == "stopped" else SystemExit

    def exit_143(signum, frame):
        raise SystemExit(143)

    previous = signal.signal(signal.SIGTERM, exit_143)
    try:
        with stops_raise() if handler == "stopped" else nullcontext():
            with pytest.raises(expected):
                atomic_torch_save({"w": torch.arange(1000.0)}, tmp_path / "last.ckpt")
    except CheckpointWriteError as err:  # what a cut write used to be reported as
        pytest.fail(f"a signal was reported as a write failure: {err}")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert torch.equal(torch.load(tmp_path / "last.ckpt", weights_only=True)["w"], torch.arange(1000.0))
    assert [p.name for p in tmp_path.iterdir()] == ["last.ckpt"]  # no temporary file left


# ---- whole runs and sweeps ---------------------------------------------------------------------------------------
def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")


def _at(phase: str, tmp_path: Path, *extra: str) -> list[str]:
    return ["+hydra.callbacks.signal._target_=tests.helpers.signal_at.SignalAtPhase",
            f"+hydra.callbacks.signal.phase={phase}", f"+hydra.callbacks.signal.stamp={tmp_path / 'signalled'}",
            *[f"+hydra.callbacks.signal.{e}" for e in extra]]


def _timed(cmd: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, float | None]:
    """The finished command, and the seconds from the signal to its end (None when no signal was sent)."""
    done = processes.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    ended = time.time()
    stamp = cwd / "signalled"
    return done, (ended - float(stamp.read_text())) if stamp.is_file() else None


def _error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr[-3000:]
    assert "could not write" not in stderr and "free space" not in stderr
    return lines[0]


def _named_files_exist(line: str, run: Path) -> None:
    for name in ("interrupted.ckpt", "last.ckpt"):
        if f"checkpoints/{name}" in line:
            assert (run / "checkpoints" / name).is_file(), line


def _run_command(tiny_corpus, senteval_root, tmp_path, *overrides: str) -> list[str]:
    return [a for a in sweep_command(tiny_corpus, senteval_root, tmp_path, "[Length,WordContent]", "encoder=bow",
                                     "logger=none", f"hydra.run.dir={tmp_path / 'run'}", *overrides)
            if not a.startswith("hydra.sweep.dir")]


@pytest.mark.slow
@pytest.mark.parametrize("signame,phase,extra", [("SIGTERM", "checkpoint", ["file=last.ckpt"]),
                                                 ("SIGINT", "suite", ["nth=2"])])
def test_a_run_stops_within_seconds_and_resumes(signame, phase, extra, tiny_corpus, senteval_root, tmp_path):
    cmd = _run_command(tiny_corpus, senteval_root, tmp_path, "trainer.max_epochs=2")
    done, seconds = _timed(cmd + _at(phase, tmp_path, f"signal={signame}", *extra), tmp_path)
    signum = signal.Signals[signame]
    assert done.returncode == 128 + signum, done.stderr[-3000:]
    assert seconds is not None and seconds < WITHIN_S
    line = _error_line(done.stderr)
    assert f"stopped by {signame}" in line
    _named_files_exist(line, tmp_path / "run")
    again = run_command(cmd + ["resume=true"], cwd=tmp_path, env=_env())  # the resume: no signal, so in this process
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((tmp_path / "run" / "run_status.json").read_text())["complete"] is True


def _sweep_command(tiny_corpus, senteval_root, tmp_path) -> list[str]:
    return sweep_command(tiny_corpus, senteval_root, tmp_path, "[Length,WordContent]", "hparams_search=qt_optuna",
                         "hydra.sweeper.n_trials=2", "encoder=bow", "trainer.max_epochs=1", "logger=none")


@pytest.mark.slow
@pytest.mark.second_part  # a whole sweep stopped, then run again, in each of four places: CI's second part
@pytest.mark.parametrize("phase,extra,cut", [
    ("checkpoint", ["file=last.ckpt", "nth=2"], 1),  # the second trial's checkpoint write: the drill
    ("suite", ["nth=3"], 1),  # the second trial's suite before training (each trial runs it twice)
    ("data", [], 0),  # the first trial's corpus preparation
    ("between", ["nth=2"], None),  # asking for the second trial: none is running
])
def test_a_sweep_stops_within_seconds_and_the_trial_it_cut_runs_again(phase, extra, cut, tiny_corpus, senteval_root,
                                                                      tmp_path):
    cmd = _sweep_command(tiny_corpus, senteval_root, tmp_path)
    done, seconds = _timed(cmd + _at(phase, tmp_path, *extra), tmp_path)
    assert done.returncode == 143, done.stderr[-3000:]
    assert seconds is not None and seconds < WITHIN_S
    assert "could not write" not in done.stderr and "Traceback" not in done.stderr
    study = optuna.load_study(study_name="qt_probing", storage=storage_url(None, tmp_path / "sweep"))
    trials = study.get_trials(deepcopy=False)
    if cut is None:
        assert [t.state for t in trials] == [TrialState.COMPLETE]
    else:
        assert trials[cut].state == TrialState.FAIL and trials[cut].user_attrs[INTERRUPTED_BY] == "SIGTERM"
        queued = trials[-1]
        assert queued.state == TrialState.WAITING and queued.user_attrs[RETRY_OF] == cut
        assert [t.state for t in trials[:cut]] == [TrialState.COMPLETE] * cut
    if phase not in ("checkpoint", "between"):
        return
    again = run_command(cmd, cwd=tmp_path, env=_env())  # the same command, here: the cut trial runs again
    assert again.returncode == 0, again.stderr[-3000:]
    trials = optuna.load_study(study_name="qt_probing", storage=storage_url(None, tmp_path / "sweep")).get_trials()
    finished = [t for t in trials if t.state == TrialState.COMPLETE]
    assert len(finished) == 2 and not (tmp_path / "sweep" / FAILED_JOBS).exists()
    if cut is not None:
        assert any(t.user_attrs.get(RETRY_OF) == cut and t.params == trials[cut].params for t in finished)
