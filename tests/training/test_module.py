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
