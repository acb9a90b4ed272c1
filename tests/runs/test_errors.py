"""train.py as a user meets it when something goes wrong: one line on stderr naming the cause, the traceback in the
run's log, exit codes that tell the truth, and no file lost or left behind."""
from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import processes
from tests.helpers.in_process import run_command

pytestmark = pytest.mark.slow  # end-to-end: outside the fast tier (-m "not slow")

ROOT = Path(__file__).resolve().parents[2]


def _command(tiny_corpus: Path, tmp_path: Path, *overrides: str, flags: tuple[str, ...] = ()) -> list[str]:
    return [sys.executable, str(ROOT / "train.py"), *flags, "encoder=bow", "encoder.embed_dim=8",
            "encoder.embedding_init=random", "data.batch_size=8", "logger=none", "~callbacks.eval_suite",
            "~callbacks.rich_progress_bar", "~callbacks.model_summary", "print_config=false",
            "data.preprocess_workers=0", f"data.train_dir={tiny_corpus / 'train'}",
            f"data.valid_dir={tiny_corpus / 'valid'}", f"paths.cache_dir={tmp_path / 'cache'}",
            f"paths.log_dir={tmp_path / 'logs'}", *overrides]


def _env() -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", PROJECT_ROOT=str(ROOT))


def _train(tiny_corpus: Path, tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    return run_command(_command(tiny_corpus, tmp_path, *overrides), cwd=tmp_path, env=_env())


def _runs(tmp_path: Path, task: str = "train") -> list[Path]:
    return sorted((tmp_path / "logs" / task / "runs").iterdir())


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr[-3000:]
    return lines[0]


def test_a_wrong_setting_is_one_line_before_any_data_is_read(tiny_corpus, tmp_path):
    done = _train(tiny_corpus, tmp_path, "data.batch_size=abc")
    assert done.returncode == 1
    line = _one_error_line(done.stderr)
    assert "data.batch_size='abc'" in line and "an integer" in line and "train.log" in line
    assert not (tmp_path / "cache").exists()  # the corpus was not read
    (run,) = _runs(tmp_path)
    assert "Traceback" in (run / "train.log").read_text()


def test_a_text_file_as_checkpoint_is_refused_and_leaves_no_checkpoint(tiny_corpus, tmp_path):
    fake = tmp_path / "notes.txt"
    fake.write_text("hello\n")
    done = _train(tiny_corpus, tmp_path, f"ckpt_path={fake}")
    assert done.returncode == 1 and "not a checkpoint" in _one_error_line(done.stderr)
    assert not list((tmp_path / "logs").rglob("*.ckpt"))  # no interrupted.ckpt of a fresh model


def _start_and_signal(cmd: list[str], cwd: Path, wait_for: Path) -> subprocess.CompletedProcess:
    """Start ``cmd``, wait until a file matches ``wait_for`` (a pattern: ``*`` may stand for a folder), then send
    SIGTERM."""
    proc = processes.start(cmd, cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not glob.glob(str(wait_for)) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert glob.glob(str(wait_for)), f"{wait_for} never appeared"
    proc.send_signal(signal.SIGTERM)  # training has begun (init.ckpt) and does not end by itself: no moment to wait
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def test_sigterm_saves_then_exits_143_and_resume_continues_in_the_same_directory(tiny_corpus, tmp_path):
    cmd = _command(tiny_corpus, tmp_path, "trainer.max_epochs=100000", "task_name=sig",
                   "callbacks=[default,epoch_checkpoints]")
    done = _start_and_signal(cmd, tmp_path, tmp_path / "logs" / "sig" / "runs" / "*" / "checkpoints" / "init.ckpt")
    assert done.returncode == 128 + signal.SIGTERM, done.stderr[-3000:]
    assert "stopped by SIGTERM" in _one_error_line(done.stderr)
    (run,) = _runs(tmp_path, "sig")
    assert (run / "checkpoints" / "interrupted.ckpt").is_file()
    epochs = len(list((run / "checkpoints").glob("epoch_*.ckpt")))
    log_lines = len((run / "train.log").read_text().splitlines())
    resumed = _train(tiny_corpus, tmp_path, f"trainer.max_epochs={epochs + 1}", "task_name=sig", "resume=true",
                     "callbacks=[default,epoch_checkpoints]")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert _runs(tmp_path, "sig") == [run]  # no stub directory for the resumed part
    assert len((run / "train.log").read_text().splitlines()) > log_lines  # its log went on in the run's own
    assert json.loads((run / "run_status.json").read_text())["complete"] is True


def test_sigterm_in_a_multirun_is_recorded_and_the_sweep_exits_143(tiny_corpus, tmp_path):
    sweep = tmp_path / "sweep"
    cmd = _command(tiny_corpus, tmp_path, "seed=1,2", "trainer.max_epochs=100000", f"hydra.sweep.dir={sweep}",
                   flags=("-m",))
    done = _start_and_signal(cmd, tmp_path, sweep / "0" / "checkpoints" / "init.ckpt")
    assert done.returncode == 128 + signal.SIGTERM, done.stderr[-3000:]
    (failed,) = [json.loads(line) for line in (sweep / "failed_jobs.jsonl").read_text().splitlines()]
    assert failed["job"] == 0 and "stopped by SIGTERM" in failed["error"]
    assert not (sweep / "1").exists()  # the signal stopped the sweep, not only its job


def test_a_time_budget_that_cuts_a_run_says_so(tiny_corpus, tmp_path):
    done = _train(tiny_corpus, tmp_path, "trainer.max_time=00:00:00:00", "trainer.max_epochs=3")
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = _runs(tmp_path)
    status = json.loads((run / "run_status.json").read_text())
    assert status["stopped_by"] == "max_time" and status["complete"] is False
    assert status["steps_planned"] == 45 and status["steps_done"] < 45
    assert "stopped by max_time" in (run / "train.log").read_text()
