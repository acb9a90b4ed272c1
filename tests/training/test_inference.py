"""SentenceInference: tokens remembered for a run give the ids and vectors of a fresh tokenisation."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from sentence_lab.evaluation.text_encoders import RemembersTokens
from sentence_lab.text import Tokenizer, Vocab
from sentence_lab.training.untrained import untrained_model

SENTENCES = ["The old man saw the river.", "the man .", "A river, old and wide!", "the man ."]


@pytest.fixture
def model():
    vocab = Vocab.build(Counter({"the": 3, "old": 2, "man": 2, "saw": 1, "river": 1, ".": 3}), max_size=100)
    encoder = {"_target_": "sentence_lab.encoders.bilstm.BiLSTMMaxEncoder", "embed_dim": 8, "hidden_dim": 8,
               "embedding_init": "random"}
    return untrained_model(encoder, vocab, Tokenizer("moses", True))


def test_remembered_tokens_give_the_same_ids_and_vectors_without_calling_the_tokenizer(model, monkeypatch):
    assert isinstance(model, RemembersTokens)
    want_ids = [model.token_ids(s) for s in SENTENCES]
    want = model.encode(SENTENCES)
    model.remember_tokens([*SENTENCES, "Only remembered ."])
    calls = []
    monkeypatch.setattr(type(model.tokenizer), "__call__", lambda self, s: calls.append(s) or s.split())
    assert [model.token_ids(s) for s in SENTENCES] == want_ids
    np.testing.assert_array_equal(model.encode(SENTENCES), want)
    assert calls == []
    model.encode(["a sentence nobody remembered"])  # others still go through the tokenizer
    assert calls == ["a sentence nobody remembered"]
    model.token_ids("Only remembered .")
    assert len(calls) == 1
    model.forget_tokens()
    model.token_ids("Only remembered .")  # forgotten: the tokenizer again
    assert calls[1:] == ["Only remembered ."]
