"""Multiruns: every job its own directory; a failed job is recorded, the others finish, the sweep fails naming it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from sentence_lab.text.glove import load_glove
from tests.helpers import processes
from tests.helpers.extras import needs_extra
from tests.helpers.in_process import run_command

pytestmark = pytest.mark.slow  # end-to-end: outside the fast tier (-m "not slow")

ROOT = Path(__file__).resolve().parents[2]


def test_a_failed_job_is_recorded_and_the_others_finish(tiny_corpus, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    sweep = tmp_path / "sweep"
    cmd = [sys.executable, str(ROOT / "train.py"), "-m", "data.batch_size=1,8", "encoder=bow",
           "++trainer.fast_dev_run=true", "logger=none", "~callbacks.eval_suite",
           f"data.train_dir={tiny_corpus / 'train'}", f"data.valid_dir={tiny_corpus / 'valid'}",
           f"paths.cache_dir={tmp_path / 'cache'}", f"hydra.sweep.dir={sweep}", "print_config=false"]
    done = run_command(cmd, cwd=tmp_path, env=env)
    assert done.returncode != 0
    assert "1 job(s) of the multirun failed" in done.stderr and "data.batch_size=1" in done.stderr
    failed = [json.loads(line) for line in (sweep / "failed_jobs.jsonl").read_text().splitlines()]
    assert [f["job"] for f in failed] == [0] and "at least 2 sentences" in failed[0]["error"]
    assert "Traceback" in (sweep / "0" / "error.txt").read_text()
    assert (sweep / "1" / "config_tree.log").is_file() and not (sweep / "1" / "error.txt").exists()


def _concatenation_sweep(experiment: str, tiny_corpus: Path, tmp_path: Path,
                         *overrides: str) -> tuple[subprocess.CompletedProcess, Path]:
    """``train.py -m experiment=<experiment>`` on the fixtures, its concatenation scored on Length (the shipped
    probing set: SENTENCE_DATA unset)."""
    env = {k: v for k, v in os.environ.items() if k != "SENTENCE_DATA"}
    env.update(PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    sweep = tmp_path / "sweep"
    cmd = [sys.executable, str(ROOT / "train.py"), "-m", f"experiment={experiment}", *overrides, "logger=none",
           "~callbacks.eval_suite", "test_after_fit=false", "data.preprocess_workers=0",
           f"data.train_dir={tiny_corpus / 'train'}", f"data.valid_dir={tiny_corpus / 'valid'}",
           f"paths.cache_dir={tmp_path / 'cache'}", f"hydra.sweep.dir={sweep}", "print_config=false",
           "hydra.callbacks.evaluate_concatenation.tasks=[Length]"]
    return run_command(cmd, cwd=tmp_path, env=env), sweep


@pytest.mark.second_part  # two training runs and an evaluation, ~40 s alone: CI's second part
def test_mcqt_trains_two_models_separately_then_evaluates_their_concatenation(tiny_corpus, tmp_path):
    """experiment=mcqt_logeswaran2018 (QT 4.4.1): a fixed-GloVe BiGRU and a from-scratch BiGRU, each its own run,
    then evaluate.py on their vectors side by side. Sizes shrunk for the fixtures; the rest is the recipe."""
    done, sweep = _concatenation_sweep("mcqt_logeswaran2018", tiny_corpus, tmp_path, "encoder.hidden_dim=6",
                                       "data.batch_size=8", "data.vocab_source=corpus", "trainer.max_epochs=1",
                                       "trainer.val_check_interval=1.0")
    assert done.returncode == 0, done.stderr[-3000:]

    fixed = torch.load(sweep / "0" / "checkpoints" / "best.ckpt", map_location="cpu", weights_only=False)
    scratch_init = torch.load(sweep / "1" / "checkpoints" / "init.ckpt", map_location="cpu", weights_only=False)
    scratch = torch.load(sweep / "1" / "checkpoints" / "best.ckpt", map_location="cpu", weights_only=False)
    for ckpt in (fixed, scratch):  # both are bidirectional GRUs of the recipe's size, trained by QT
        assert ckpt["hyper_parameters"]["encoder"]["_target_"] == "sentence_lab.encoders.gru.GRUEncoder"
        assert ckpt["hyper_parameters"]["encoder"]["bidirectional"] is True
        assert ckpt["hyper_parameters"]["objective"]["_target_"].endswith("QuickThoughts")
    vocab = fixed["vocabs"]["source"]
    table = next(v for k, v in fixed["state_dict"].items() if k.endswith("embedding.weight"))
    index, vectors = load_glove()
    known = [w for w in vocab if w in index][:50]
    assert len(known) == 50
    for word in known:  # the fixed model's word vectors are GloVe's, untouched by training
        assert torch.allclose(table[vocab.index(word)], torch.as_tensor(vectors[index[word]]).float())
    key = next(k for k in scratch["state_dict"] if k.endswith("embedding.weight"))
    assert scratch["state_dict"][key].shape[1] == 300  # learnt from scratch, 300-d (QT 4.3)
    assert not torch.equal(scratch["state_dict"][key], scratch_init["state_dict"][key])

    result = json.loads((sweep / "concatenation" / "results.json").read_text())
    assert "Length" in result["results"]
    assert result["encoder"]["output_dim"] == 2 * 2 * (2 * 6)  # two models, each [f(s), g(s)] of 2 x 6 units
    fixed_part, scratch_part = (part["encoder"] for part in result["encoder"]["parts"])
    assert (fixed_part["embedding_init"], fixed_part["freeze_embeddings"]) == ("glove", True)
    assert (scratch_part["embedding_init"], scratch_part["freeze_embeddings"]) == ("random", False)


@pytest.mark.second_part  # two training runs and an evaluation, ~40 s alone: CI's second part
def test_combine_skip_trains_a_uni_and_a_bi_gru_then_scores_their_concatenation_and_its_epoch_0(tiny_corpus,
                                                                                                  tmp_path):
    """experiment=skipthought_combine (Kiros et al. 2015's combine-skip): a GRU and a bidirectional GRU, each trained
    with skip-thought on triples, then evaluate.py on their concatenation and on the concatenation of their
    init.ckpt. Sizes shrunk for the fixtures; the rest is the recipe."""
    done, sweep = _concatenation_sweep("skipthought_combine", tiny_corpus, tmp_path, "encoder.hidden_dim=6",
                                       "objective.hidden_dim=8", "objective.embed_dim=4", "data.batch_size=6",
                                       "trainer.max_steps=4", "trainer.val_check_interval=2",
                                       "model.encoder_frozen_steps=2")
    assert done.returncode == 0, done.stderr[-3000:]

    for job, bidirectional in (("0", False), ("1", True)):
        ckpt = torch.load(sweep / job / "checkpoints" / "best.ckpt", map_location="cpu", weights_only=False)
        hp = ckpt["hyper_parameters"]
        assert hp["encoder"]["_target_"].endswith("GRUEncoder") and hp["encoder"]["bidirectional"] is bidirectional
        assert hp["objective"]["_target_"].endswith("SkipThought")
        assert yaml.safe_load((sweep / job / ".hydra" / "config.yaml").read_text())["data"]["run_length"] == 3
    trained = json.loads((sweep / "concatenation" / "results.json").read_text())
    start = json.loads((sweep / "concatenation_init" / "results.json").read_text())
    assert "Length" in trained["results"] and "Length" in start["results"]
    assert trained["encoder"]["output_dim"] == start["encoder"]["output_dim"] == 6 + 2 * 6
    assert [p["name"] for p in start["encoder"]["parts"]] == ["checkpoint:0/init", "checkpoint:1/init"]
    assert trained["results"]["Length"] != start["results"]["Length"]


def _joblib_sweep(tiny_corpus: Path, tmp_path: Path, *overrides: str,
                  workers: int = 2) -> tuple[subprocess.CompletedProcess, Path]:
    """A 2-job joblib sweep on a cold corpus cache, each job preparing the corpus in ``workers`` worker processes."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    sweep = tmp_path / "sweep"
    cmd = [sys.executable, str(ROOT / "train.py"), "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
           "encoder=bow", "encoder.embed_dim=16", "encoder.embedding_init=random", "data.batch_size=8",
           "trainer.max_epochs=1", "trainer.val_check_interval=1.0", "logger=none", "~callbacks.eval_suite",
           "test_after_fit=false", f"data.preprocess_workers={workers}", f"data.train_dir={tiny_corpus / 'train'}",
           f"data.valid_dir={tiny_corpus / 'valid'}", f"paths.cache_dir={tmp_path / 'cache'}",
           f"hydra.sweep.dir={sweep}", "print_config=false", *overrides]
    return processes.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600), sweep


@needs_extra("sweeps-joblib")
@pytest.mark.second_part  # two joblib workers beside the sweep, 20 s or more: CI's second part
def test_a_joblib_sweep_prepares_its_corpus_on_a_cold_cache(tiny_corpus, tmp_path):
    """Inside a loky worker, the corpus's tokenising workers used to die at start-up and be replaced forever."""
    done, sweep = _joblib_sweep(tiny_corpus, tmp_path, "seed=1,2")
    assert done.returncode == 0, done.stderr[-3000:]
    for job in ("0", "1"):
        assert json.loads((sweep / job / "run_status.json").read_text())["complete"]
    assert not (sweep / "failed_jobs.jsonl").exists()


@needs_extra("sweeps-joblib")
@pytest.mark.second_part  # two joblib workers beside the sweep, 20 s or more: CI's second part
def test_a_joblib_job_killed_by_the_system_is_recorded_and_named(tiny_corpus, tmp_path):
    """Job 0 dies by SIGKILL at its second step (what the out-of-memory killer does). Joblib then stops the pool: job 1
    finishes if it was done by then, else it is recorded as not ended too."""
    done, sweep = _joblib_sweep(tiny_corpus, tmp_path, "+callbacks.kill._target_=tests.helpers.kill_at.KillAt",
                                "+callbacks.kill.step=2,1000000", workers=0)  # the kill, not the preparation
    assert done.returncode != 0
    # the last line but the interpreter's own shutdown warning about the killed worker's semaphores
    last = [line for line in done.stderr.strip().splitlines() if "resource_tracker" not in line][-1]
    assert "job(s) of the multirun failed" in last and "#0 (" in last and "did not end" in last, done.stderr[-2000:]
    failed = {f["job"]: f for f in map(json.loads, (sweep / "failed_jobs.jsonl").read_text().splitlines())}
    assert "TerminatedWorkerError" in failed[0]["error"] and failed[0]["dir"] == str(sweep / "0")
    job1_complete = (sweep / "1" / "run_status.json").is_file()
    assert job1_complete != (1 in failed)  # finished, or recorded: never neither
