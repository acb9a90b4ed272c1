"""SentenceModel.encode as a user calls it."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from objectives.module import untrained_model
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
