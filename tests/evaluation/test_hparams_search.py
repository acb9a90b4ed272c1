"""Sweeps on real launchers: Optuna maximising a suite score runs 2 trials on fixtures; SLURM and joblib compose."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

from tests.helpers.extras import needs_extra
from tests.helpers.in_process import run_command
from tests.helpers.train_config import sweep_command

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_optuna_runs_two_trials_maximising_the_mean_probing_accuracy(tiny_corpus, senteval_root, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    sweep = tmp_path / "sweep"
    cmd = sweep_command(tiny_corpus, senteval_root, tmp_path, "[Length,WordContent]", "hparams_search=qt_optuna",
                        "hydra.sweeper.n_trials=2", "hydra.sweeper.sampler.n_startup_trials=2", "encoder=bow",
                        "trainer.max_epochs=1", "logger=none")
    done = run_command(cmd, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    best = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    assert best["name"] == "optuna" and 0 < best["best_value"] <= 100
    assert {"model.optimizer.lr", "objective.temperature"} <= set(best["best_params"])
    assert sorted(p.name for p in sweep.iterdir() if p.name.isdigit()) == ["0", "1"]


@pytest.mark.slow
@needs_extra("sweeps-slurm")
@needs_extra("sweeps-joblib")
def test_slurm_and_joblib_launchers_compose():
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        slurm = compose("train", overrides=["hydra/launcher=slurm"], return_hydra_config=True)
        joblib = compose("train", overrides=["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
                         return_hydra_config=True)
    assert slurm.hydra.launcher._target_.endswith("SlurmLauncher") and slurm.hydra.launcher.timeout_min == 600
    assert joblib.hydra.launcher._target_.endswith("JoblibLauncher") and joblib.hydra.launcher.n_jobs == 2


@pytest.mark.parametrize(("overrides", "study"), [(["hparams_search=qt_optuna"], "qt_probing"),
                                                  (["hparams_search=optuna", "objective=nli"], "nli_probing"),
                                                  (["hparams_search=qt_optuna_pareto"], "qt_probing_sts")])
def test_each_search_names_its_study_and_keeps_it_in_a_directory_of_its_own(overrides, study):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=overrides, return_hydra_config=True)
    sweeper = cfg.hydra.sweeper
    assert sweeper._target_ == "hydra_plugins.sentence_lab.optuna_sweeper.OptunaSweeper"
    assert sweeper.study_name == study and cfg.hydra.sweep.dir.endswith(f"/sweeps/{study}")
    assert cfg.hydra.mode.name == "MULTIRUN"
    assert (sweeper.pruner._target_ == "optuna.pruners.NopPruner") == ("pareto" in overrides[0])
    assert len(sweeper.direction if not isinstance(sweeper.direction, str) else [sweeper.direction]) == \
        (2 if "pareto" in overrides[0] else 1)
