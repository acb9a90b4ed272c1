"""Sweeps on real launchers: Optuna maximising a suite score runs 2 trials on fixtures; SLURM and joblib compose."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from hydra import compose, initialize_config_dir

ROOT = Path(__file__).resolve().parents[2]


def test_optuna_runs_two_trials_maximising_the_mean_probing_accuracy(tiny_corpus, senteval_root, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    sweep = tmp_path / "sweep"
    cmd = [sys.executable, str(ROOT / "train.py"), "hparams_search=qt_optuna", "hydra.sweeper.n_trials=2",
           "hydra.sweeper.sampler.n_startup_trials=2", "encoder=bow", "encoder.embed_dim=16",
           "encoder.embedding_init=random", "trainer.max_epochs=1", "trainer.val_check_interval=1.0",
           "logger=none", "print_config=false",
           f"data.train_dir={tiny_corpus / 'train'}", f"data.valid_dir={tiny_corpus / 'valid'}",
           f"paths.cache_dir={tmp_path / 'cache'}", f"hydra.sweep.dir={sweep}",
           f"callbacks.senteval.data_dir={senteval_root}", "callbacks.senteval.tasks=[Length,WordContent]",
           "callbacks.senteval.params.l2_grid=[1e-3]", "callbacks.senteval.params.max_epoch=4"]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    best = yaml.safe_load((sweep / "optimization_results.yaml").read_text())
    assert best["name"] == "optuna" and 0 < best["best_value"] <= 100
    assert {"model.optimizer.lr", "objective.temperature"} <= set(best["best_params"])
    assert sorted(p.name for p in sweep.iterdir() if p.name.isdigit()) == ["0", "1"]


def test_slurm_and_joblib_launchers_compose():
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        slurm = compose("train", overrides=["hydra/launcher=slurm"], return_hydra_config=True)
        joblib = compose("train", overrides=["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
                         return_hydra_config=True)
    assert slurm.hydra.launcher._target_.endswith("SlurmLauncher") and slurm.hydra.launcher.timeout_min == 600
    assert joblib.hydra.launcher._target_.endswith("JoblibLauncher") and joblib.hydra.launcher.n_jobs == 2
