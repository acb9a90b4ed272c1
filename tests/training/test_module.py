"""SentenceModel.encode as a user calls it."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from sentence_lab.text import Tokenizer, Vocab
from sentence_lab.training.module import SentenceModel
from sentence_lab.training.untrained import untrained_model


@pytest.fixture(scope="module")
def model():
    vocab = Vocab.build(Counter({"the": 3, "old": 2, "man": 2, "saw": 1, "river": 1, ".": 3}), max_size=100)
    encoder = {"_target_": "sentence_lab.encoders.bilstm.BiLSTMMaxEncoder", "embed_dim": 8, "hidden_dim": 8,
               "embedding_init": "random"}
    return untrained_model(encoder, vocab, Tokenizer("moses", True))


def test_an_untrained_encoder_does_not_depend_on_the_other_words_of_its_vocabulary():
    """The vocabulary is built from the tasks evaluated: a longer task list must not draw another network."""
    encoder = {"_target_": "sentence_lab.encoders.bilstm.BiLSTMMaxEncoder", "embed_dim": 8, "hidden_dim": 8,
               "embedding_init": "random"}
    few = Vocab.build(Counter({"the": 3, "man": 2}))
    many = Vocab.build(Counter({"the": 3, "man": 2, **{f"word{i}": 9 for i in range(500)}}))
    assert few.stoi["man"] != many.stoi["man"]  # the shared words sit at other rows
    tokenizer = Tokenizer("moses", True)
    small, large = untrained_model(encoder, few, tokenizer, seed=7), untrained_model(encoder, many, tokenizer, seed=7)
    other_seed = untrained_model(encoder, few, tokenizer, seed=8)
    table = "objective.f.embedding.embedding.weight"
    layers = {k: v for k, v in small.state_dict().items() if k != table}
    assert len(layers) == 8  # the LSTM's weights and biases, both directions
    for name, value in layers.items():
        torch.testing.assert_close(large.state_dict()[name], value, rtol=0, atol=0)
        assert not torch.equal(other_seed.state_dict()[name], value)
    for word in ("the", "man", "<unk>"):
        row = small.state_dict()[table][few.stoi[word]]
        torch.testing.assert_close(large.state_dict()[table][many.stoi[word]], row, rtol=0, atol=0)
        assert row.abs().max() <= 0.1 and not torch.equal(other_seed.state_dict()[table][few.stoi[word]], row)
    assert len({tuple(large.state_dict()[table][i].tolist()) for i in range(1, len(many))}) == len(many) - 1
    np.testing.assert_array_equal(small.encode(["the man ."]), large.encode(["the man ."]))


def test_one_string_is_one_sentence_not_one_vector_per_character(model):
    one = model.encode("The old man saw the river.")
    assert one.shape == (model.output_dim,)
    np.testing.assert_allclose(one, model.encode(["The old man saw the river.", "the man ."])[0], rtol=0, atol=1e-6)


def test_sentences_that_are_not_strings_are_refused_in_one_line(model):
    with pytest.raises(TypeError, match="encode takes sentences as strings; got a list"):
        model.encode([["the", "man"]])


def _checkpoint(model, path, hyper_parameters: dict) -> str:
    torch.save({"hyper_parameters": hyper_parameters, "state_dict": model.state_dict(),
                "vocabs": {"source": model.vocab.itos}}, path)
    return str(path)


def test_a_checkpoint_reads_text_with_the_tokenizer_it_was_trained_with(model, tmp_path):
    """A model trained on Moses tokens keeps reading ``doesn 't``; new runs read ``does n't`` (issue 20)."""
    hp = dict(model.hparams)
    moses = SentenceModel.load_checkpoint(_checkpoint(model, tmp_path / "moses.ckpt", hp), map_location="cpu")
    assert moses.tokenizer.to_dict() == {"kind": "moses", "lowercase": True, "lang": "en"}
    assert moses.tokenizer("It doesn't.") == ["it", "doesn", "'t", "."]
    treebank = SentenceModel.load_checkpoint(
        _checkpoint(model, tmp_path / "treebank.ckpt", {**hp, "tokenizers": {"source": Tokenizer().to_dict()}}),
        map_location="cpu")
    assert treebank.tokenizer("It doesn't.") == ["it", "does", "n't", "."]


def test_a_checkpoint_that_records_no_tokenizer_reads_moses_tokens(model, tmp_path):
    hp = {k: v for k, v in model.hparams.items() if k != "tokenizers"}
    old = SentenceModel.load_checkpoint(_checkpoint(model, tmp_path / "old.ckpt", hp), map_location="cpu")
    assert old.tokenizer.kind == "moses"


def test_weight_decay_spares_biases_and_layer_norms_as_transformers_are_fine_tuned():
    """AdamW (whose default decay is 0.01) on a transformer: every matrix decays, none of the LayerNorm weights or
    biases does, the encoders' groups at ``encoder_lr_scale`` times the rate either way; a BiLSTM keeps its two
    groups (one for the encoders, one for the rest), as do optimisers without decay."""
    vocab = Vocab.from_sentences([["a", "b", "c"]])
    transformer = {"_target_": "sentence_lab.encoders.transformer.encoder.TransformerEncoder", "embed_dim": 16,
                   "d_model": 16, "num_layers": 1, "num_heads": 2, "ffn_dim": 32}
    bilstm = {"_target_": "sentence_lab.encoders.bilstm.BiLSTMMaxEncoder", "embed_dim": 16, "hidden_dim": 8}
    objective = {"_target_": "sentence_lab.objectives.nli.NLI", "hidden_dim": 8}

    def built(encoder: dict, optimizer: dict) -> tuple[SentenceModel, list[dict]]:
        model = SentenceModel(encoder=encoder, objective=objective, vocab=vocab, optimizer=optimizer,
                              encoder_lr_scale=0.5)
        return model, model.configure_optimizers().param_groups

    model, groups = built(transformer, {"_target_": "torch.optim.AdamW", "lr": 1e-3})
    assert [(bool(g.get("encoder")), g["weight_decay"], g["lr"]) for g in groups] == [
        (False, 0.01, 1e-3), (False, 0.0, 1e-3), (True, 0.01, 5e-4), (True, 0.0, 5e-4)]
    spared = {id(p) for g in groups if not g["weight_decay"] for p in g["params"]}
    norms_and_biases = [p for m in model.modules() if isinstance(m, torch.nn.LayerNorm) for p in m.parameters()]
    norms_and_biases += [m.bias for m in model.modules() if isinstance(m, torch.nn.Linear) and m.bias is not None]
    assert norms_and_biases and {id(p) for p in norms_and_biases} <= spared
    assert all(p.ndim > 1 for g in groups if g["weight_decay"] for p in g["params"])
    for encoder, optimizer in ((bilstm, {"_target_": "torch.optim.AdamW", "lr": 1e-3}),
                               (transformer, {"_target_": "torch.optim.Adam", "lr": 1e-3})):
        assert [bool(g.get("encoder")) for g in built(encoder, optimizer)[1]] == [False, True]
