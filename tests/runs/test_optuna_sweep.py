"""Optuna sweeps (sentence_lab.runs.optuna_sweep): the search space, the trial budget, and whole sweeps on the
fixtures that prune, resume and run a trial under DDP."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from sentence_lab.optuna_storage import PRUNED_AT, RETRY_OF, open_storage, storage_url
from sentence_lab.runs.optuna_sweep import (
    consecutive_groups,
    counted,
    results_document,
    search_space,
)
from sentence_lab.runs.sweeps import FAILED_JOBS, job_events
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


def sweep(tiny_corpus: Path, senteval_root: Path, tmp_path: Path, *overrides: str,
          expect: int = 0) -> subprocess.CompletedProcess:
    cmd = sweep_command(tiny_corpus, senteval_root, tmp_path, "[Length,WordContent]", "hparams_search=qt_optuna",
                        "hydra.sweeper.sampler.n_startup_trials=2", "encoder=bow", "trainer.max_epochs=2",
                        "logger=none", *overrides)
    done = subprocess.run(cmd, cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == expect, done.stderr[-3000:]
    return done


def load(tmp_path: Path) -> optuna.Study:
    return optuna.load_study(study_name="qt_probing", storage=storage_url(None, tmp_path / "sweep"))


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
                                                                                          tmp_path):
    sweep(tiny_corpus, senteval_root, tmp_path, "hydra.sweeper.n_trials=2", "hydra.sweeper.heartbeat_interval=1",
          "hydra.sweeper.grace_period=2")
    first = {t.number: (t.params, t.value) for t in load(tmp_path).trials}
    # A sweep killed without a word: its trial stays RUNNING, its heartbeat stops.
    study = load(tmp_path)
    orphan = study.ask({name: dist for name, dist in study.trials[0].distributions.items()})
    storage = open_storage(storage_url(None, tmp_path / "sweep"), heartbeat_interval=1, grace_period=2)
    storage.record_heartbeat(orphan._trial_id)
    time.sleep(3)
    sweep(tiny_corpus, senteval_root, tmp_path, "hydra.sweeper.n_trials=3", "hydra.sweeper.heartbeat_interval=1",
          "hydra.sweeper.grace_period=2")
    trials = load(tmp_path).trials
    assert {t.number: (t.params, t.value) for t in trials[:2]} == first  # kept, never repeated
    assert trials[orphan.number].state == TrialState.FAIL
    (rerun,) = trials[orphan.number + 1:]
    assert rerun.user_attrs[RETRY_OF] == orphan.number and rerun.params == orphan.params
    assert rerun.state == TrialState.COMPLETE
    assert sorted(int(p.name) for p in (tmp_path / "sweep").iterdir() if p.name.isdigit()) == [0, 1, rerun.number]


@pytest.mark.slow
def test_a_ddp_trial_is_pruned_on_every_rank_at_the_same_epoch(tiny_corpus, senteval_root, tmp_path):
    done = sweep(tiny_corpus, senteval_root, tmp_path, "hydra.sweeper.n_trials=1", "hydra/sweeper/pruner=threshold",
                 "hydra.sweeper.pruner.lower=101", "trainer=ddp_cpu", "data.batch_size=8",
                 "trainer.strategy.timeout.seconds=300")
    (trial,) = load(tmp_path).trials  # rank 1 ran the job's command, not a sweep of its own asking for a trial
    assert trial.state == TrialState.PRUNED and trial.user_attrs[PRUNED_AT] == 1
    run = tmp_path / "sweep" / "0"
    log = (run / "train.log").read_text() + done.stderr + done.stdout
    assert "GLOBAL_RANK: 1, MEMBER: 2/2" in log
    assert (done.stdout + done.stderr).count("Optuna study qt_probing") == 1
    assert json.loads((run / "run_status.json").read_text())["epochs_done"] == 1
    assert job_events(tmp_path / "sweep")[0]["ended"]["outcome"] == "pruned"
    assert not (tmp_path / "sweep" / FAILED_JOBS).exists()
