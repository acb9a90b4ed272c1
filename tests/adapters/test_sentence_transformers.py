"""A trained model exported as a sentence-transformers folder encodes as the checkpoint does (issue 32)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.helpers.extras import missing_extra

if reason := missing_extra("sentence-transformers-export"):
    pytest.skip(reason, allow_module_level=True)

from sentence_transformers import SentenceTransformer

from sentence_lab.adapters.export_st import main as export_main
from sentence_lab.adapters.sentence_transformers import export, load_exported
from sentence_lab.adapters.trained import load_checkpoint_encoder
from sentence_lab.checkpoints.non_finite_weights import NonFiniteWeights
from sentence_lab.runs.run import fit
from sentence_lab.text.refused_files import EXPORT_MODULE_CLASS, RefusedFile
from tests.helpers import processes
from tests.helpers.train_config import compose_objective_cfg

pytestmark = pytest.mark.slow  # end-to-end: outside the fast tier (-m "not slow")

ROOT = Path(__file__).resolve().parents[2]
QUIET = ["logger=none", "~callbacks.rich_progress_bar", "~callbacks.model_summary", "test_after_fit=false"]
SMALL = {"gru": ["encoder.hidden_dim=16"], "bilstm_max": ["encoder.hidden_dim=16"], "bigru": ["encoder.hidden_dim=16"],
         "bilstm_last": ["encoder.hidden_dim=16"], "gatedconv": ["encoder.channels=16", "encoder.num_layers=2"],
         "mc_bilstm_max": ["encoder.channels.fixed.hidden_dim=16", "encoder.channels.tuned.hidden_dim=16"]}
# Raw text as users pass it: punctuation, capitals, words outside the training vocabulary (some GloVe knows).
SENTENCES = ["The old man saw the river.", "A zebra, unseen, crossed the bridge!", "Walked", "\"Why?\" she asked.",
             "The cat sat under the red tree and the dog ran quickly over the house ."] * 3


def trained_run(objective: str, encoder: str, tiny_corpus, tiny_pairs, tmp_path) -> Path:
    overrides = [f"encoder={encoder}", *SMALL.get(encoder, []), "trainer.max_steps=2", "trainer.max_epochs=1",
                 "++trainer.val_check_interval=1", "++trainer.limit_val_batches=1", "trainer.num_sanity_val_steps=0",
                 *QUIET]
    if objective in ("skipthought", "autoencoder", "nmt"):
        overrides += ["objective.hidden_dim=16", "objective.embed_dim=8"]
    if objective == "jbi":
        overrides.append("objective.k=3")
    cfg = compose_objective_cfg(objective, tiny_corpus, tiny_pairs, tmp_path, overrides)
    fit(cfg)
    return tmp_path


def largest_relative_difference(ours: np.ndarray, theirs: np.ndarray) -> float:
    """Per sentence, the largest coordinate difference over the vector's norm; the worst sentence."""
    return float((np.abs(ours - theirs).max(1) / np.maximum(np.linalg.norm(ours, axis=1), 1e-12)).max())


# Every objective's embed, every trainable encoder.
@pytest.mark.parametrize("objective,encoder", [("qt", "gru"), ("nli", "bilstm_max"), ("autoencoder", "mc_bilstm_max"),
                                               ("jbi", "bilstm_max"), ("skipthought", "gru"), ("jpa", "bow"),
                                               ("nmt", "bilstm_last"), ("qt", "gatedconv"), ("nli", "bigru")])
def test_the_exported_folder_encodes_raw_text_as_the_checkpoint(objective, encoder, tiny_corpus, tiny_pairs, tmp_path):
    run = trained_run(objective, encoder, tiny_corpus, tiny_pairs, tmp_path / "run")
    for expansion in (True, False):
        out = tmp_path / f"exported-{expansion}"
        assert export_main([f"ckpt_path={run}", f"out={out}", f"vocab_expansion={str(expansion).lower()}"]) == 0
        ours, _ = load_checkpoint_encoder(str(run), vocab_expansion=expansion)
        theirs = SentenceTransformer(str(out), trust_remote_code=True, device="cpu")
        assert theirs.get_embedding_dimension() == ours.output_dim
        expected = ours.encode(SENTENCES)
        assert largest_relative_difference(expected, theirs.encode(SENTENCES, batch_size=4)) <= 1e-5
        assert (out / "model.safetensors").is_file() and (out / "modules.json").is_file()
        config = json.loads((out / "sentence_lab.json").read_text())
        assert config["vocabs"]["source"] == list(ours.vocab.itos)
        assert bool(config["encode_vocab_added"]) == (expansion and bool((ours.expansion or {}).get("added_words")))


def test_expansion_reaches_the_exported_model(tiny_corpus, tiny_pairs, tmp_path):
    """A word outside the training vocabulary that GloVe knows ("zebra") is encoded through the expanded table, not
    as <unk>: the two exports differ on it and each agrees with the checkpoint under the same setting."""
    run = trained_run("qt", "bilstm_max", tiny_corpus, tiny_pairs, tmp_path / "run")
    vectors = {}
    for expansion in (True, False):
        out = tmp_path / f"exported-{expansion}"
        export_main([f"ckpt_path={run}", f"out={out}", f"vocab_expansion={str(expansion).lower()}"])
        vectors[expansion] = SentenceTransformer(str(out), trust_remote_code=True, device="cpu").encode(["a zebra"])
    ours, _ = load_checkpoint_encoder(str(run), vocab_expansion=True)
    assert ours.expansion and ours.expansion.get("added_words", 0) > 0, ours.expansion
    assert not np.allclose(vectors[True], vectors[False])
    assert largest_relative_difference(ours.encode(["a zebra"]), vectors[True]) <= 1e-5


def test_loading_without_trust_remote_code_says_how(tiny_corpus, tiny_pairs, tmp_path):
    run = trained_run("qt", "gru", tiny_corpus, tiny_pairs, tmp_path / "run")
    export_main([f"ckpt_path={run}", f"out={tmp_path / 'exported'}"])
    with pytest.raises(ValueError, match="trust_remote_code=True"):
        SentenceTransformer(str(tmp_path / "exported"), device="cpu")


@pytest.mark.parametrize("argv,message", [(["out=x"], "ckpt_path not given"),
                                          (["ckpt_path=[a,b]", "out=x"], "combine-QT"),
                                          (["ckpt_path=a", "out=x", "colour=red"], "unknown setting colour")])
def test_bad_arguments_are_one_line(argv, message):
    with pytest.raises(SystemExit, match=message):
        export_main(argv)


def test_round_trip_through_the_suite_gives_the_checkpoints_scores(tiny_corpus, tiny_pairs, senteval_root, tmp_path):
    """evaluate.py on the exported folder (encoder=sentence_transformers) scores as on the checkpoint, per task."""
    run = trained_run("qt", "bilstm_max", tiny_corpus, tiny_pairs, tmp_path / "run")
    out = tmp_path / "exported"
    export_main([f"ckpt_path={run}", f"out={out}"])
    env_root = {"SENTENCE_DATA": str(senteval_root), "PROJECT_ROOT": str(tmp_path)}
    scores = {}
    for name, source in (("checkpoint", [f"ckpt_path={run}"]),
                         ("exported", ["encoder=sentence_transformers", f"encoder.model={out}",
                                       "encoder.trust_remote_code=true"])):
        results = tmp_path / f"{name}.json"
        proc = processes.run([sys.executable, str(ROOT / "evaluate.py"), *source, "tasks=[MR,STS14,SICKRelatedness]",
                               "evaluation.kfold=2", "evaluation.max_epoch=4", "evaluation.l2_grid=[1e-3]",
                               f"results_file={results}"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env={**os.environ, **env_root})
        assert proc.returncode == 0, proc.stderr[-2000:]
        scores[name] = {task: r["main_score"] for task, r in json.loads(results.read_text())["results"].items()}
    assert scores["exported"].keys() == scores["checkpoint"].keys() == {"MR", "STS14", "SICKRelatedness"}
    for task, value in scores["checkpoint"].items():
        assert scores["exported"][task] == pytest.approx(value, abs=1e-6), task


def test_weights_holding_nan_are_not_exported(tiny_corpus, tiny_pairs, tmp_path):
    model, _ = load_checkpoint_encoder(str(trained_run("qt", "bow", tiny_corpus, tiny_pairs, tmp_path)), False)
    with torch.no_grad():
        next(model.parameters()).view(-1)[0] = float("nan")
    with pytest.raises(NonFiniteWeights, match="export to .*the weights hold NaN or inf"):
        export(model, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_received_export_loads_only_the_projects_classes(tiny_corpus, tiny_pairs, tmp_path):
    """load_exported: the project's own folder loads as SentenceTransformer(..., trust_remote_code=True) does; a
    sentence_lab.json naming builtins.open (nested) is refused before anything is built, and so is a modules.json
    naming another class (trust_remote_code=True would import it)."""
    run = trained_run("qt", "gru", tiny_corpus, tiny_pairs, tmp_path / "run")
    out = tmp_path / "exported"
    export_main([f"ckpt_path={run}", f"out={out}"])
    ours = load_exported(out, device="cpu").encode(SENTENCES[:3])
    assert np.allclose(ours, SentenceTransformer(str(out), trust_remote_code=True, device="cpu").encode(SENTENCES[:3]))
    config = json.loads((out / "sentence_lab.json").read_text())
    made = tmp_path / "made-by-sender"
    config["hyper_parameters"]["encoder"]["extra"] = {"_target_": "builtins.open", "_args_": [str(made), "w"]}
    (out / "sentence_lab.json").write_text(json.dumps(config))
    with pytest.raises(RefusedFile, match=r"sentence_lab\.json: refused: its saved setting encoder\.extra\._target_"):
        load_exported(out, device="cpu")
    assert not made.exists()
    modules = json.loads((out / "modules.json").read_text())
    modules[0]["type"] = "evil.Module"
    (out / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(RefusedFile, match="evil.Module"):
        load_exported(out, device="cpu")


def test_the_export_module_class_is_the_one_the_check_admits():
    from sentence_lab.adapters.sentence_transformers import SentenceLabModule

    assert f"{SentenceLabModule.__module__}.{SentenceLabModule.__qualname__}" == EXPORT_MODULE_CLASS
