"""SentenceModel.encode as a user calls it."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from training.module import SentenceModel, untrained_model
from text import Tokenizer, Vocab


@pytest.fixture(scope="module")
def model():
    vocab = Vocab.build(Counter({"the": 3, "old": 2, "man": 2, "saw": 1, "river": 1, ".": 3}), max_size=100)
    encoder = {"_target_": "encoders.bilstm.BiLSTMMaxEncoder", "embed_dim": 8, "hidden_dim": 8,
               "embedding_init": "random"}
    return untrained_model(encoder, vocab, Tokenizer("moses", True))


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
