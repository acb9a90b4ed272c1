"""Optuna sweeps (sentence_lab.runs.optuna_sweep): the search space, the trial budget, and whole sweeps on the
fixtures that prune, resume and run a trial under DDP."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import optuna
import pytest
import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from sentence_lab.optuna_storage import ATTEMPT, PRUNED_AT, RETRY_OF, open_storage, storage_url
from sentence_lab.runs.optuna_sweep import (
    build_sampler,
    consecutive_groups,
    counted,
    results_document,
    retry,
    search_space,
    stopping_signal,
    trial_overrides,
)
from sentence_lab.runs.sweeps import FAILED_JOBS, job_events
from sentence_lab.stop_signals import Stopped
from tests.helpers import processes
from tests.helpers.extras import needs_extra
from tests.helpers.in_process import run_command
from tests.helpers.services import postgresql_url
from tests.helpers.train_config import sweep_command

ROOT = Path(__file__).resolve().parents[2]


def test_the_search_space_reads_hydras_sweep_syntax_and_the_command_line_wins():
    space, fixed = search_space(
        {"model.optimizer.lr": "tag(log, interval(0.0001, 0.002))", "objective.temperature": "choice(0.05, 0.1)",
         "data.batch_size": "range(100, 401, 100)", "encoder.hidden_dim": "int(interval(16, 64))"},
        ["objective.temperature=0.2", "seed=3", "encoder.dropout=interval(0.0, 0.5)"])
    assert space["model.optimizer.lr"] == FloatDistribution(0.0001, 0.002, log=True)
    assert space["data.batch_size"] == IntDistribution(100, 400, step=100)  # range's end is exclusive
    assert space["encoder.hidden_dim"] == IntDistribution(16, 64)
    assert space["encoder.dropout"] == FloatDistribution(0.0, 0.5)
    assert "objective.temperature" not in space  # a plain value on the command line fixes it
    assert fixed == ["objective.temperature=0.2", "seed=3"]
    choice, _ = search_space({"objective.temperature": "choice(0.05, 0.1)"}, [])
    assert choice["objective.temperature"] == CategoricalDistribution([0.05, 0.1])


def test_a_trials_parameters_become_overrides_hydra_reads_back_as_sampled():
    params = {"encoder": "gru", "model.optimizer.lr": 0.00017748945247990684, "data.batch_size": 400,
              "tags": "a b,c", "objective.temperature": 1e-05, "flag": True}
    lines = trial_overrides(params)
    assert lines[0] == "encoder=gru"  # a config group choice, unquoted
    parsed = OverridesParser.create().parse_overrides(lines)
    assert {o.key_or_group: o.value() for o in parsed} == params


def test_the_budget_counts_finished_trials_once_and_an_interrupted_one_through_its_rerun(tmp_path):
    study = optuna.create_study(storage=open_storage(storage_url(None, tmp_path)), direction="maximize")
    for value in (1.0, 2.0):
        study.tell(study.ask(), value)
    pruned = study.ask()
    pruned.report(0.5, 1)
    study.tell(pruned, state=TrialState.PRUNED)
    interrupted = study.tell(study.ask({"x": FloatDistribution(0, 1)}), state=TrialState.FAIL)
    study.enqueue_trial(interrupted.params, user_attrs={RETRY_OF: interrupted.number})
    rerun = study.ask({"x": FloatDistribution(0, 1)})
    assert rerun.params == interrupted.params and rerun.user_attrs[RETRY_OF] == interrupted.number
    assert counted(study.get_trials(deepcopy=False)) == (3, 1)  # 2 complete + 1 pruned; the rerun runs
    study.tell(rerun, state=TrialState.FAIL)  # a failure that is not interrupted counts
    assert counted(study.get_trials(deepcopy=False)) == (4, 0)
    assert (tmp_path / "optuna.db").is_file()


def test_an_interrupted_trial_is_queued_again_at_most_twice(tmp_path):
    study = optuna.create_study()
    runs = []
    for _ in range(4):
        trial = study.ask({"x": FloatDistribution(0, 1)})
        runs.append(trial.params)
        retry(study, study.tell(trial, state=TrialState.FAIL))
    assert runs[0] == runs[1] == runs[2] != runs[3]  # three runs of the same parameters, then a fresh sample
    assert [t.user_attrs.get(ATTEMPT) for t in study.trials] == [None, 2, 3, None, 2]  # the last one queued


def test_a_study_that_goes_on_moves_its_samplers_seed_by_the_trials_it_holds():
    config = OmegaConf.create({"_target_": "optuna.samplers.RandomSampler", "seed": 1})

    def first_proposal(sampler: optuna.samplers.BaseSampler) -> dict:
        return optuna.create_study(sampler=sampler).ask({"x": FloatDistribution(0, 1)}).params

    assert first_proposal(build_sampler(config, 0)) == first_proposal(optuna.samplers.RandomSampler(seed=1))
    assert first_proposal(build_sampler(config, 2)) == first_proposal(optuna.samplers.RandomSampler(seed=3))
    assert first_proposal(build_sampler(config, 2)) != first_proposal(build_sampler(config, 0))


def test_jobs_are_numbered_as_their_trials_when_another_sweep_took_numbers_between(tmp_path):
    study = optuna.create_study()
    trials = [study.ask() for _ in range(5)]
    mine = [trials[0], trials[1], trials[3], trials[4]]  # trial 2 went to another sweep
    assert [[t.number for t in group] for group in consecutive_groups(mine)] == [[0, 1], [3, 4]]


def test_several_objectives_give_the_pareto_front(tmp_path):
    study = optuna.create_study(directions=["maximize", "maximize"])
    for values in ((1.0, 3.0), (2.0, 2.0), (0.5, 0.5), (3.0, 1.0)):
        study.tell(study.ask({"x": FloatDistribution(0, 1)}), values)
    doc = results_document(study)
    assert sorted(s["trial"] for s in doc["solutions"]) == [0, 1, 3]  # (0.5, 0.5) is dominated


def test_a_journal_file_storage_keeps_the_study(tmp_path):
    url = f"journal:{tmp_path / 'nfs' / 'study.log'}"
    study = optuna.create_study(storage=open_storage(url), study_name="s")
    study.tell(study.ask(), 1.0)
    again = optuna.load_study(study_name="s", storage=open_storage(url))
    assert [t.value for t in again.trials] == [1.0]


# ---- whole sweeps on the fixtures --------------------------------------------------------------------------------
def env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")


def sweep(tiny_corpus: Path, senteval_root: Path, tmp_path: Path, *overrides: str, expect: int = 0,
          timeout: float = 900) -> subprocess.CompletedProcess:
    cmd = sweep_command(tiny_corpus, senteval_root, tmp_path, "[Length,WordContent]", "hparams_search=qt_optuna",
                        "hydra.sweeper.sampler.n_startup_trials=2", "encoder=bow", "trainer.max_epochs=2",
                        "logger=none", *overrides)
    done = run_command(cmd, cwd=tmp_path, env=env(), timeout=timeout)
    assert done.returncode == expect, done.stderr[-3000:]
    return done


def load(tmp_path: Path) -> optuna.Study:
    return optuna.load_study(study_name="qt_probing", storage=storage_url(None, tmp_path / "sweep"))


@dataclass(frozen=True)
class Storage:
    """Where a sweep's study lives: its URL, the study's name, and the overrides that point a sweep there."""
    url: str
    study_name: str
    overrides: tuple[str, ...]

    def load(self) -> optuna.Study:
        return optuna.load_study(study_name=self.study_name, storage=self.url)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.cluster)])
def storage(request, tmp_path) -> Storage:
    """The default SQLite file in the sweep folder, or a study of this test's own in the PostgreSQL database of
    ``scripts/services.sh`` (skipped, saying so, where that server does not answer)."""
    if request.param == "sqlite":
        return Storage(storage_url(None, tmp_path / "sweep"), "qt_probing", ())
    url, name = postgresql_url(), f"test_{uuid.uuid4().hex[:12]}"
    return Storage(url, name, (f"hydra.sweeper.storage='{url}'", f"hydra.sweeper.study_name={name}"))


@pytest.mark.slow
def test_a_pruned_trial_stops_after_its_epoch_ends_as_pruned_and_keeps_its_files(tiny_corpus, senteval_root,
                                                                                    tmp_path):
    # No probing mean reaches 101: the threshold pruner stops every trial after its first trained epoch.
    sweep(tiny_corpus, senteval_root, tmp_path, "hydra.sweeper.n_trials=2", "hydra/sweeper/pruner=threshold",
          "hydra.sweeper.pruner.lower=101")
    study = load(tmp_path)
    assert [t.state for t in study.trials] == [TrialState.PRUNED, TrialState.PRUNED]
    for trial in study.trials:
        assert trial.user_attrs[PRUNED_AT] == 1 and sorted(trial.intermediate_values) == [0, 1]
        run = tmp_path / "sweep" / str(trial.number)
        assert json.loads((run / "run_status.json").read_text())["stopped_by"] == "pruned"
        assert (run / "checkpoints" / "last.ckpt").is_file() and (run / "eval" / "epoch_001.json").is_file()
        assert not (run / "eval" / "epoch_002.json").exists()  # the second epoch never ran
        # epoch 1's probing mean, as the suite wrote it
        scores = json.loads((run / "eval" / "epoch_001.json").read_text())["results"]
        probing = [scores[t]["main_score"] for t in ("Length", "WordContent")]
        assert trial.intermediate_values[1] == pytest.approx(sum(probing) / 2)
    events = job_events(tmp_path / "sweep")
    assert [events[n]["ended"]["outcome"] for n in (0, 1)] == ["pruned", "pruned"]
    assert not (tmp_path / "sweep" / FAILED_JOBS).exists()


@pytest.mark.slow
def test_the_same_command_again_goes_on_with_the_study_and_reruns_an_interrupted_trial(tiny_corpus, senteval_root,
                                                                                          tmp_path, storage):
    beats = ("hydra.sweeper.heartbeat_interval=1", "hydra.sweeper.grace_period=2", *storage.overrides)
    sweep(tiny_corpus, senteval_root, tmp_path, "hydra.sweeper.n_trials=2", *beats)
    first = {t.number: (t.params, t.value) for t in storage.load().trials}
    # Sweeps killed without a word: their trials stay RUNNING. One had sent heartbeats, which stop; the other was
    # killed between creating its trial and its first heartbeat (issue 73: every later sweep waited for it forever).
    study = storage.load()
    space = {name: dist for name, dist in study.trials[0].distributions.items()}
    orphan, silent = study.ask(space), study.ask(space)
    open_storage(storage.url, heartbeat_interval=1, grace_period=2).record_heartbeat(orphan._trial_id)
    time.sleep(3)
    sweep(tiny_corpus, senteval_root, tmp_path, "hydra.sweeper.n_trials=4", *beats, timeout=300)
    trials = storage.load().trials
    assert {t.number: (t.params, t.value) for t in trials[:2]} == first  # kept, never repeated
    assert trials[orphan.number].state == trials[silent.number].state == TrialState.FAIL
    reruns = {t.user_attrs[RETRY_OF]: t for t in trials[silent.number + 1:]}
    assert reruns.keys() == {orphan.number, silent.number} and len(trials) == silent.number + 3
    for cut in (orphan, silent):
        assert reruns[cut.number].params == cut.params and reruns[cut.number].state == TrialState.COMPLETE
    assert sorted(int(p.name) for p in (tmp_path / "sweep").iterdir() if p.name.isdigit()) == [
        0, 1, *sorted(t.number for t in reruns.values())]


@pytest.mark.slow
def test_a_ddp_trial_is_pruned_on_every_rank_at_the_same_epoch(tiny_corpus, senteval_root, tmp_path):
    done = sweep(tiny_corpus, senteval_root, tmp_path, "hydra.sweeper.n_trials=1", "hydra/sweeper/pruner=threshold",
                 "hydra.sweeper.pruner.lower=101", "trainer=ddp_cpu", "data.batch_size=8",
                 "trainer.strategy.timeout.seconds=300", f"paths.log_dir={tmp_path / 'logs'}")
    (trial,) = load(tmp_path).trials  # rank 1 ran the job's command, not a sweep of its own asking for a trial
    assert trial.state == TrialState.PRUNED and trial.user_attrs[PRUNED_AT] == 1
    run = tmp_path / "sweep" / "0"
    assert "GLOBAL_RANK: 1, MEMBER: 2/2" in done.stderr + done.stdout
    assert "run directory: " + str(run) in (run / "train_ddp_process_1.log").read_text()  # rank 1 ran in the job's
    assert not (tmp_path / "logs" / "train" / "runs").exists()  # no stray run directory for rank 1
    assert (done.stdout + done.stderr).count("Optuna study qt_probing") == 1
    assert json.loads((run / "run_status.json").read_text())["epochs_done"] == 1
    assert job_events(tmp_path / "sweep")[0]["ended"]["outcome"] == "pruned"
    assert not (tmp_path / "sweep" / FAILED_JOBS).exists()


@pytest.mark.slow
def test_ctrl_c_fails_the_running_trial_and_the_next_command_runs_it_again(tiny_corpus, senteval_root,
                                                                                 tmp_path):
    cmd = sweep_command(tiny_corpus, senteval_root, tmp_path, "[Length,WordContent]", "hparams_search=qt_optuna",
                        "encoder=bow", "trainer.max_epochs=1000", "logger=none", "hydra.sweeper.n_trials=1")
    # Ctrl-C as a terminal sends it: SIGINT handled by Python even when this test runs in a background job, whose
    # children inherit SIGINT ignored (a non-interactive shell's `&`).
    proc = processes.start(cmd, cwd=tmp_path, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while not (tmp_path / "sweep" / "0" / "eval" / "epoch_001.json").is_file():  # inside the trial's training
        assert proc.poll() is None and time.monotonic() < deadline, "the trial did not get to its first epoch"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=120) != 0
    (cut, queued) = load(tmp_path).trials
    assert cut.state == TrialState.FAIL
    assert queued.state == TrialState.WAITING and queued.user_attrs[RETRY_OF] == 0
    assert job_events(tmp_path / "sweep")[0]["ended"]["outcome"] == "interrupted"
    assert (tmp_path / "sweep" / FAILED_JOBS).is_file()
    # The next command runs the queued trial; the interrupted job is set aside, so the sweep ends well.
    again = [a.replace("trainer.max_epochs=1000", "trainer.max_epochs=1") for a in cmd]
    done = run_command(again, cwd=tmp_path, env=env())
    assert done.returncode == 0, done.stderr[-3000:]
    trials = load(tmp_path).trials
    assert [t.state for t in trials] == [TrialState.FAIL, TrialState.COMPLETE] and trials[1].params == cut.params
    assert not (tmp_path / "sweep" / FAILED_JOBS).exists()
    assert json.loads((tmp_path / "sweep" / "interrupted_jobs.jsonl").read_text())["job"] == 0


@pytest.mark.slow
def test_two_objectives_end_with_the_pareto_front(tiny_corpus, senteval_root, tmp_path):
    cmd = sweep_command(tiny_corpus, senteval_root, tmp_path, "[Length,WordContent,MR]",
                        "hparams_search=qt_optuna_pareto", "encoder=bow", "trainer.max_epochs=1", "logger=none",
                        "hydra.sweeper.n_trials=2",
                        "optimized_metric=[probing/mean,transfer/mean]", "hydra.sweeper.study_name=qt_probing")
    done = processes.run(cmd, cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    trials = load(tmp_path).trials
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 2 and all(len(t.values) == 2 for t in trials)
    results = yaml.safe_load((tmp_path / "sweep" / "optimization_results.yaml").read_text())
    assert {s["trial"] for s in results["solutions"]} <= {0, 1} and results["solutions"]
    run = json.loads((tmp_path / "sweep" / "0" / "eval" / "epoch_001.json").read_text())["results"]
    assert trials[0].values[1] == pytest.approx(run["MR"]["main_score"])  # transfer/mean of one task: MR's


@pytest.mark.slow
@pytest.mark.second_part  # two sweeps of processes beside the sweep's own, half a minute or more each: CI's second part
@pytest.mark.parametrize("launcher", [
    pytest.param(["hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "hydra.sweeper.n_jobs=2"], id="joblib",
                 marks=needs_extra("sweeps-joblib")),
    pytest.param(["hydra/launcher=submitit_local"], id="submitit", marks=needs_extra("sweeps-slurm"))])
def test_trials_in_other_processes_report_to_the_study(launcher, tiny_corpus, senteval_root, tmp_path):
    """joblib's workers, and submitit's jobs (the SLURM launcher's path, run locally): each job opens the study."""
    cmd = sweep_command(tiny_corpus, senteval_root, tmp_path, "[Length,WordContent]", "hparams_search=qt_optuna",
                        "hydra.sweeper.sampler.n_startup_trials=2", "encoder=bow", "trainer.max_epochs=2",
                        "logger=none", "hydra.sweeper.n_trials=2", "hydra/sweeper/pruner=threshold",
                        "hydra.sweeper.pruner.lower=101", *launcher)
    proc = processes.start(cmd, cwd=tmp_path, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, stderr = proc.communicate(timeout=900)
    assert proc.returncode == 0, stderr[-3000:]
    trials = load(tmp_path).trials
    assert [t.state for t in trials] == [TrialState.PRUNED] * 2
    assert all(sorted(t.intermediate_values) == [0, 1] for t in trials)
    pids = {e["started"]["pid"] for e in job_events(tmp_path / "sweep").values()}
    assert proc.pid not in pids  # each job ran in a process of its own, not the sweep's


@pytest.mark.slow
@pytest.mark.second_part  # two sweeps in two processes (45-50 s): the README's command stays within its minutes
def test_two_sweeps_on_one_storage_share_the_study(tiny_corpus, senteval_root, tmp_path, storage):
    cmd = sweep_command(tiny_corpus, senteval_root, tmp_path, "[Length,WordContent]", "hparams_search=qt_optuna",
                        "hydra.sweeper.sampler.n_startup_trials=2", "encoder=bow", "trainer.max_epochs=1",
                        "logger=none", "hydra.sweeper.n_trials=4", *storage.overrides)
    # one sweep in a process of its own, the other in this one once the first has begun a trial: two on one study
    other = processes.start([*cmd, "hydra.sweeper.sampler.seed=1"], cwd=tmp_path, env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not (tmp_path / "sweep" / "jobs.jsonl").is_file():
        assert other.poll() is None and time.monotonic() < deadline, "the first sweep began no trial"
        time.sleep(0.05)
    here = run_command([*cmd, "hydra.sweeper.sampler.seed=2"], cwd=tmp_path, env=env())
    _, stderr = other.communicate(timeout=900)
    assert other.returncode == 0, stderr[-3000:]
    assert here.returncode == 0, here.stderr[-3000:]
    trials = storage.load().trials
    # Each trial ran once, in its own directory, by one of the two; together they filled the budget (two sweeps
    # that count the same free place at once may each take it: at most one trial more).
    assert all(t.state == TrialState.COMPLETE for t in trials) and 4 <= len(trials) <= 5
    events = job_events(tmp_path / "sweep")
    assert sorted(events) == [t.number for t in trials]
    assert len({e["started"]["pid"] for e in events.values()}) == 2  # both sweeps ran trials


def test_a_stop_is_told_from_a_failure_wherever_the_job_ran():
    assert stopping_signal(Stopped(signal.SIGTERM)) == "SIGTERM"
    assert stopping_signal(SystemExit(130)) == "SIGINT"  # an in-process job's exit
    assert stopping_signal(KeyboardInterrupt()) == "SIGINT"
    quoted = RuntimeError("Job 1 has not produced any output\nError stream produced:\n[rank: 0] Received SIGTERM: 15\n"
                          "error: stopped by SIGTERM at step 14; checkpoints/last.ckpt is in /x: continue with ...")
    assert stopping_signal(quoted) == "SIGTERM"  # submitit quotes a job's stderr
    for failure in (SystemExit(1), SystemExit("3 job(s) failed"), ValueError("stopped by the user"), OSError()):
        assert stopping_signal(failure) is None
