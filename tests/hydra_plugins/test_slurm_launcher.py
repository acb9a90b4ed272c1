"""``hydra/launcher=slurm`` on a real SLURM cluster (scripts/services.sh: slurmctld, slurmd, slurmdbd on 127.0.0.1):
sweeps go through ``sbatch``, a refused submission is one line, and a job SLURM ends early (its time limit, a
requeue) writes its checkpoint, comes back and finishes in its own directory."""
from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from hydra_plugins.sentence_lab.slurm_launcher import resuming
from sentence_lab.optuna_storage import INTERRUPTED_BY, RETRY_OF, storage_url
from sentence_lab.reporting.report import main as report_main
from sentence_lab.runs.sweeps import FAILED_JOBS, INTERRUPTED_JOBS, restarted_by_slurm
from tests.helpers import processes
from tests.helpers.logged_points import tensorboard_steps
from tests.helpers.slurm import (
    cancel_jobs_of,
    final_states,
    job_events,
    launcher_overrides,
    slurm_partition,
    submitted_job_ids,
    wait_until,
)
from tests.helpers.train_config import sweep_command

ROOT = Path(__file__).resolve().parents[2]


def env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")


@pytest.fixture
def partition(tmp_path):
    """The local cluster's partition; every job the test's sweep submitted is cancelled when the test ends."""
    name = slurm_partition()
    yield name
    cancel_jobs_of(tmp_path / "sweep")


def slurm_sweep(tiny_corpus: Path, senteval_root: Path, tmp_path: Path, partition: str, *overrides: str) -> list[str]:
    return sweep_command(tiny_corpus, senteval_root, tmp_path, "[Length,WordContent]", "-m", "encoder=bow",
                         "logger=tensorboard", *launcher_overrides(partition), *overrides)


def test_a_restarted_job_resumes_and_a_first_start_does_not(monkeypatch):
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    assert restarted_by_slurm() == 0
    monkeypatch.setenv("SLURM_RESTART_COUNT", "2")
    assert restarted_by_slurm() == 2
    assert resuming(["seed=1", "resume=false"]) == ["seed=1", "resume=true"]


def epochs_scored(run: Path) -> list[int]:
    return sorted(int(p.stem.split("_")[1]) for p in (run / "eval").glob("epoch_*.json"))


@pytest.mark.cluster
@pytest.mark.slow
def test_a_sweep_runs_as_slurm_jobs_and_the_report_reads_every_run(tiny_corpus, senteval_root, tmp_path, partition):
    cmd = slurm_sweep(tiny_corpus, senteval_root, tmp_path, partition, "seed=1,2", "trainer.max_epochs=2")
    done = processes.run(cmd, cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    sweep = tmp_path / "sweep"
    events = job_events(sweep)
    ids = sorted({e["slurm_job_id"] for e in events})
    assert len(ids) == 2 and all(e["slurm_restarts"] == 0 for e in events)  # each point a SLURM job of its own
    assert final_states(ids) == dict.fromkeys(ids, "COMPLETED")  # as SLURM's accounting has them
    assert {i.split("_")[0] for i in ids} == {i.split("_")[0] for i in submitted_job_ids(sweep)}  # one sbatch array
    for run in (sweep / "0", sweep / "1"):
        assert json.loads((run / "run_status.json").read_text())["complete"]
        assert epochs_scored(run) == [0, 1, 2]  # the per-epoch suite, before training and after each epoch
    assert report_main([str(sweep)]) == 0
    assert (sweep / "report.csv").read_text().count("\n") == 3  # the header and both runs


@pytest.mark.cluster
@pytest.mark.parametrize("request_, reason", [
    (["hydra.launcher.partition=nowhere"], "invalid partition"),
    (["hydra.launcher.cpus_per_task=4096"], "More processors requested than permitted"),
    (["hydra.launcher.mem_gb=100000"], "Memory specification can not be satisfied")],
    ids=["partition", "cpus", "memory"])
def test_a_request_slurm_refuses_is_one_line_and_nothing_is_queued(request_, reason, tiny_corpus, senteval_root,
                                                                   tmp_path, partition):
    cmd = slurm_sweep(tiny_corpus, senteval_root, tmp_path, partition, "seed=1,2", *request_)
    done = processes.run(cmd, cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: SLURM refused the sweep's jobs, nothing was submitted: ") and reason in last
    assert submitted_job_ids(tmp_path / "sweep") == []  # no job folder: sbatch queued nothing
    assert not (tmp_path / "sweep" / "0").exists()


def extend_time_limit_once_interrupted(sweep: Path, minutes: int) -> str:
    """Wait for the job's first start to end interrupted, then give it ``minutes`` (the rest of the run fits, and its
    next start is not signalled at once); its SLURM job id."""
    wait_until(lambda: any(e["event"] == "ended" for e in job_events(sweep)), timeout=180,
               what="the time limit's signal to stop the job")
    job = job_events(sweep)[-1]["slurm_job_id"]
    subprocess.run(["scontrol", "update", f"JobId={job}", f"TimeLimit={minutes}"], check=True, timeout=30)
    return job


def assert_resumed_to_the_end(run: Path, epochs: int, steps_per_epoch: int) -> None:
    status = json.loads((run / "run_status.json").read_text())
    assert status["complete"] and status["steps_done"] == status["steps_planned"] == epochs * steps_per_epoch
    assert epochs_scored(run) == list(range(epochs + 1))  # every epoch's suite, each in one file
    last = json.loads((run / "eval" / f"epoch_{epochs:03d}.json").read_text())["results"]
    assert sorted(last) == ["Length", "WordContent"]  # the last epoch's scores, both tasks


@pytest.mark.cluster
@pytest.mark.slow
def test_a_job_past_its_time_limit_is_signalled_requeued_and_finishes_in_its_own_directory(
        tiny_corpus, senteval_root, tmp_path, partition):
    """A one-minute limit and the signal 20 s before it. SLURM checks limits every 30 s and sends the signal at the
    first check that finds less than the delay plus 30 s left: 10 to 40 s into the job (a delay within 30 s of the
    limit can signal at the very start, before Python has a handler). A run that needs longer is cut by the signal,
    writes its checkpoint and is requeued by submitit; then the test gives the job time enough to finish."""
    epochs = 200  # 15 steps and a suite each: ~55 s of training on one core
    cmd = slurm_sweep(tiny_corpus, senteval_root, tmp_path, partition, "seed=1", f"trainer.max_epochs={epochs}",
                      "data.batch_size=8", "hydra.launcher.timeout_min=1", "hydra.launcher.signal_delay_s=20")
    proc = processes.start(cmd, cwd=tmp_path, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sweep = tmp_path / "sweep"
    job = extend_time_limit_once_interrupted(sweep, minutes=5)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    events = job_events(sweep)
    ends = [e["outcome"] for e in events if e["event"] == "ended"]
    assert ends[0] == "interrupted" and ends[-1] == "complete" and {e["slurm_job_id"] for e in events} == {job}
    assert_resumed_to_the_end(sweep / "0", epochs, steps_per_epoch=15)
    cut = [json.loads(line) for line in (sweep / INTERRUPTED_JOBS).read_text().splitlines()]
    assert cut and all("stopped by SIGUSR2" in c["error"] for c in cut)  # the time limit's signal, as submitit asks
    assert not (sweep / FAILED_JOBS).exists()  # an interruption SLURM came back from is no failure
    assert final_states([job]) == {job: "COMPLETED"}


@pytest.mark.cluster
@pytest.mark.slow
def test_a_job_requeued_by_hand_is_stopped_and_resumes_from_its_checkpoint(tiny_corpus, senteval_root, tmp_path,
                                                                            partition):
    """Pre-emption's path: ``scontrol requeue`` while the job trains (SIGTERM, then SLURM queues it again)."""
    epochs = 20
    cmd = slurm_sweep(tiny_corpus, senteval_root, tmp_path, partition, "seed=1", f"trainer.max_epochs={epochs}",
                      "data.batch_size=8", "hydra.launcher.timeout_min=10")
    proc = processes.start(cmd, cwd=tmp_path, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sweep = tmp_path / "sweep"
    wait_until(lambda: (sweep / "0" / "eval" / "epoch_003.json").is_file(), timeout=120, what="three epochs trained")
    job = job_events(sweep)[0]["slurm_job_id"]
    subprocess.run(["scontrol", "requeue", job], check=True, timeout=30)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    events = job_events(sweep)
    assert [(e["event"], e["slurm_restarts"]) for e in events] == [("started", 0), ("ended", 0), ("started", 1),
                                                                   ("ended", 1)]
    assert [e["outcome"] for e in events if e["event"] == "ended"] == ["interrupted", "complete"]
    assert_resumed_to_the_end(sweep / "0", epochs, steps_per_epoch=15)
    cut = [json.loads(line) for line in (sweep / INTERRUPTED_JOBS).read_text().splitlines()]
    assert len(cut) == 1 and "stopped by SIGTERM" in cut[0]["error"]
    assert not (sweep / FAILED_JOBS).exists()


@pytest.mark.cluster
@pytest.mark.slow
def test_a_job_requeued_during_its_epoch_end_suite_resumes_there_with_nothing_twice(tiny_corpus, senteval_root,
                                                                                     tmp_path, partition):
    """Issue 85: ``scontrol requeue`` while epoch 1's suite runs (held there 30 s by the drill): the job comes back at
    epoch 1's end, not at the last step save point before it; no step trained or logged twice, epoch 1 scored once."""
    stamp = tmp_path / "in_suite"
    cmd = slurm_sweep(tiny_corpus, senteval_root, tmp_path, partition, "seed=1", "trainer.max_epochs=2",
                      "data.batch_size=8", "trainer.log_every_n_steps=1", "hydra.launcher.timeout_min=10",
                      "callbacks.last_checkpoint.every_n_train_steps=4",
                      "+hydra.callbacks.signal._target_=tests.helpers.signal_at.SignalAtPhase",
                      "+hydra.callbacks.signal.phase=suite", "+hydra.callbacks.signal.nth=2",
                      "+hydra.callbacks.signal.signal=none", "+hydra.callbacks.signal.pause_s=30",
                      f"+hydra.callbacks.signal.stamp={stamp}")
    proc = processes.start(cmd, cwd=tmp_path, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sweep = tmp_path / "sweep"
    wait_until(stamp.is_file, timeout=180, what="the job in epoch 1's suite")
    job = job_events(sweep)[0]["slurm_job_id"]
    subprocess.run(["scontrol", "requeue", job], check=True, timeout=30)
    _, stderr = proc.communicate(timeout=400)
    assert proc.returncode == 0, stderr[-3000:]
    assert [e["outcome"] for e in job_events(sweep) if e["event"] == "ended"] == ["interrupted", "complete"]
    run = sweep / "0"
    assert_resumed_to_the_end(run, 2, steps_per_epoch=15)
    assert "stopped by SIGTERM at step 15" in (run / "train.log").read_text()  # at epoch 1's end, in its suite
    steps = tensorboard_steps(run)
    assert sorted(steps["train/loss_step"]) == list(range(30))  # every step trained and logged once
    assert steps["val/loss"] == [14, 29] and steps["train/loss_epoch"] == [14, 29]
    assert steps["probing/Length"] == steps["probing/WordContent"] == [0, 1, 2]  # epoch 1 scored once


@pytest.mark.cluster
@pytest.mark.slow
def test_an_optuna_trial_past_its_time_limit_with_no_requeue_left_is_failed_as_interrupted_and_queued_again(
        tiny_corpus, senteval_root, tmp_path, partition):
    """``max_num_timeout=0``: the time limit's signal ends the job for good (interrupted, its checkpoint written);
    the sweep says so and exits 128 + 12, and under Optuna the trial is failed with ``interrupted_by: SIGUSR2`` and its
    parameters queued again for the next command."""
    cmd = sweep_command(tiny_corpus, senteval_root, tmp_path, "[Length]", "hparams_search=qt_optuna",
                        "hydra.sweeper.sampler.n_startup_trials=2", "encoder=bow", "trainer.max_epochs=200",
                        "data.batch_size=8", "logger=none", "hydra.sweeper.n_trials=1",
                        *launcher_overrides(partition), "hydra.launcher.timeout_min=1",
                        "hydra.launcher.signal_delay_s=20", "hydra.launcher.max_num_timeout=0")
    done = processes.run(cmd, cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=240)
    assert done.returncode == 128 + signal.SIGUSR2, done.stderr[-3000:]
    assert "was stopped by SIGUSR2 and not requeued" in done.stdout + done.stderr  # Hydra logs to stdout
    assert [(e["event"], e.get("outcome")) for e in job_events(tmp_path / "sweep")] == [("started", None),
                                                                                          ("ended", "interrupted")]
    trials = optuna.load_study(study_name="qt_probing", storage=storage_url(None, tmp_path / "sweep")).trials
    cut, queued = trials
    assert cut.state == TrialState.FAIL and cut.user_attrs[INTERRUPTED_BY] == "SIGUSR2"
    assert queued.state == TrialState.WAITING and queued.user_attrs[RETRY_OF] == 0
    assert queued.system_attrs["fixed_params"] == cut.params  # what the next command's first trial runs
    assert (tmp_path / "sweep" / "0" / "checkpoints" / "interrupted.ckpt").is_file()


@pytest.mark.cluster
@pytest.mark.slow
def test_scancel_stops_the_job_and_the_sweep_with_its_checkpoint_kept(tiny_corpus, senteval_root, tmp_path, partition):
    cmd = slurm_sweep(tiny_corpus, senteval_root, tmp_path, partition, "seed=1", "trainer.max_epochs=150",
                      "data.batch_size=8", "hydra.launcher.timeout_min=10")
    proc = processes.start(cmd, cwd=tmp_path, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sweep = tmp_path / "sweep"
    wait_until(lambda: (sweep / "0" / "eval" / "epoch_002.json").is_file(), timeout=120, what="two epochs trained")
    job = job_events(sweep)[0]["slurm_job_id"]
    subprocess.run(["scancel", job], check=True, timeout=30)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert f"SLURM job {job} (#0) was stopped by SIGTERM" in out + err
    assert [(e["event"], e.get("outcome")) for e in job_events(sweep)] == [("started", None), ("ended", "interrupted")]
    assert final_states([job])[job].startswith("CANCELLED")  # "CANCELLED by 0": by root
    assert (sweep / "0" / "checkpoints" / "interrupted.ckpt").is_file()


@pytest.mark.cluster
@pytest.mark.slow
def test_an_optuna_sweeps_trials_are_slurm_jobs_and_pruning_still_prunes(tiny_corpus, senteval_root, tmp_path,
                                                                        partition):
    """Each trial a SLURM job that reports its epochs to the study (SQLite in the shared sweep folder); a threshold
    no score reaches prunes every trial after its first epoch, and the study accounts for all of them."""
    cmd = sweep_command(tiny_corpus, senteval_root, tmp_path, "[Length,WordContent]", "hparams_search=qt_optuna",
                        "hydra.sweeper.sampler.n_startup_trials=2", "encoder=bow", "trainer.max_epochs=2",
                        "logger=none", "hydra.sweeper.n_trials=2", "hydra.sweeper.n_jobs=2",
                        "hydra/sweeper/pruner=threshold", "hydra.sweeper.pruner.lower=101",
                        *launcher_overrides(partition))
    done = processes.run(cmd, cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    study = optuna.load_study(study_name="qt_probing", storage=storage_url(None, tmp_path / "sweep"))
    assert [t.state for t in study.trials] == [TrialState.PRUNED] * 2
    assert all(sorted(t.intermediate_values) == [0, 1] for t in study.trials)  # epoch 0 and 1 reported, then pruned
    ids = sorted({e["slurm_job_id"] for e in job_events(tmp_path / "sweep")})
    assert len(ids) == 2 and set(final_states(ids).values()) == {"COMPLETED"}


@pytest.mark.cluster
@pytest.mark.slow
def test_a_trial_killed_without_warning_is_recorded_and_the_same_command_runs_it_again(tiny_corpus, senteval_root,
                                                                                       tmp_path, partition):
    """SIGKILL to the job's Python (the out-of-memory killer's way; SLURM 22.05 turns ``scancel --signal=KILL`` into
    its usual SIGTERM first): no checkpoint, no line of the run's own. The sweep records the job with SLURM's end
    state and stops; the same command runs that trial's parameters again and repeats nothing that finished."""
    cmd = sweep_command(tiny_corpus, senteval_root, tmp_path, "[Length]", "hparams_search=qt_optuna",
                        "hydra.sweeper.sampler.n_startup_trials=2", "encoder=bow", "trainer.max_epochs=20",
                        "data.batch_size=8", "logger=none", "hydra.sweeper.n_trials=2",
                        *launcher_overrides(partition))
    sweep = tmp_path / "sweep"
    proc = processes.start(cmd, cwd=tmp_path, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: (sweep / "0" / "eval" / "epoch_002.json").is_file(), timeout=120, what="two epochs trained")
    started = job_events(sweep)[0]
    os.kill(started["pid"], signal.SIGKILL)  # the job runs on this machine: its pid is the one it recorded
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 1, err[-3000:]
    assert f"SLURM job {started['slurm_job_id']} ended as FAILED" in err.strip().splitlines()[-1]
    failed = [json.loads(line) for line in (sweep / FAILED_JOBS).read_text().splitlines()]
    assert [f["job"] for f in failed] == [0] and "without a word" in failed[0]["error"]
    again = processes.run(cmd, cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    trials = optuna.load_study(study_name="qt_probing", storage=storage_url(None, sweep)).trials
    killed = trials[0]
    assert killed.state == TrialState.FAIL
    reruns = [t for t in trials if t.user_attrs.get(RETRY_OF) == killed.number]
    assert len(reruns) == 1 and reruns[0].params == killed.params and reruns[0].state == TrialState.COMPLETE
    assert sum(t.state == TrialState.COMPLETE for t in trials) == 2  # the budget, nothing run twice
