"""WordEmbedding: random and GloVe initialisation, freezing, the pad row."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from sentence_lab.encoders.embedding import WordEmbedding, word_keyed_rows
from sentence_lab.text import PAD_ID
from sentence_lab.text.glove import load_glove


def test_random_init_is_small_uniform_with_zero_pad_row(vocab) -> None:
    emb = WordEmbedding(vocab, embed_dim=16)
    w = emb.weight
    assert w.shape == (len(vocab), 16)
    assert w.abs().max() <= 0.1
    assert w[PAD_ID].abs().sum() == 0
    assert w[1:].abs().sum(dim=1).gt(0).all()
    assert w.requires_grad


def test_glove_init_copies_known_words_only(vocab) -> None:
    index, vectors = load_glove()
    emb = WordEmbedding(vocab, embed_dim=50, embedding_init="glove")
    w = emb.weight.detach().numpy()
    for word in ("the", "cat", "quickly"):
        np.testing.assert_array_equal(w[vocab.stoi[word]], vectors[index[word]])
    unknown = vocab.stoi["zzqxv_not_a_word"]
    assert "zzqxv_not_a_word" not in index
    assert np.abs(w[unknown]).max() <= 0.1  # still the random init
    assert np.abs(w[unknown]).sum() > 0
    # no row of GloVe's vectors ended up in the unknown word's row
    assert not np.any(np.all(vectors == w[unknown], axis=1))
    assert np.abs(w[PAD_ID]).sum() == 0


def test_glove_init_logs_how_many_words_were_found(vocab, caplog) -> None:
    with caplog.at_level("INFO", logger="sentence_lab.encoders.embedding"):
        WordEmbedding(vocab, embed_dim=50, embedding_init="glove")
    index, _ = load_glove()
    expected = sum(1 for w in vocab.itos if w in index or w.lower() in index)
    assert f"{expected} of {len(vocab)}" in caplog.text


def test_glove_init_with_wrong_dim_names_the_fix(vocab) -> None:
    with pytest.raises(ValueError, match="embed_dim=50"):
        WordEmbedding(vocab, embed_dim=128, embedding_init="glove")


def test_unknown_init_is_rejected(vocab) -> None:
    with pytest.raises(ValueError, match="random"):
        WordEmbedding(vocab, embed_dim=8, embedding_init="word2vec")


def test_frozen_table_has_no_grad(vocab) -> None:
    emb = WordEmbedding(vocab, embed_dim=8, freeze_embeddings=True)
    assert not emb.weight.requires_grad
    assert not emb(torch.tensor([[4, 5, 0]])).requires_grad


def test_pad_row_gets_no_gradient_and_stays_zero(vocab) -> None:
    emb = WordEmbedding(vocab, embed_dim=8)
    emb(torch.tensor([[4, 5, 0, 0]])).sum().backward()
    grad = emb.weight.grad
    assert grad is not None  # the table is trainable: backward gave it a gradient
    assert grad[PAD_ID].abs().sum() == 0
    assert grad[4].abs().sum() > 0
    torch.testing.assert_close(emb(torch.tensor([[PAD_ID]])), torch.zeros(1, 1, 8))


def test_redrawn_rows_keep_glove_and_key_the_rest_by_word(vocab) -> None:
    index, vectors = load_glove()
    emb = WordEmbedding(vocab, embed_dim=50, embedding_init="glove")
    emb.redraw_random_rows(list(vocab.itos), seed=3)
    w = emb.weight.detach().numpy()
    np.testing.assert_array_equal(w[vocab.stoi["the"]], vectors[index["the"]])
    assert w[PAD_ID].sum() == 0
    unknown = "zzqxv_not_a_word"
    row = w[vocab.stoi[unknown]]
    assert np.abs(row).max() <= 0.1 and np.abs(row).sum() > 0
    # the same word, alone in another vocabulary, gets the same row; another seed another row
    np.testing.assert_array_equal(word_keyed_rows([unknown], 50, seed=3)[0], row)
    assert not np.array_equal(word_keyed_rows([unknown], 50, seed=4)[0], row)
    with pytest.raises(ValueError, match="words for a table of"):
        emb.redraw_random_rows(["<pad>"], seed=3)
