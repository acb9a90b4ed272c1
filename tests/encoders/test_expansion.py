"""Vocabulary expansion: the least-squares map, and words outside the training vocabulary through encode."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from sentence_lab.encoders.embedding import WordEmbedding
from sentence_lab.encoders.expansion import expand_embeddings, fit_linear_map
from sentence_lab.text import SPECIALS, UNK_ID, Vocab
from sentence_lab.text.glove import load_glove
from sentence_lab.training.module import SentenceModel

BOW_GLOVE_FROZEN = {"_target_": "sentence_lab.encoders.bow.BagOfWordsEncoder", "embed_dim": 50,
                    "embedding_init": "glove", "freeze_embeddings": True}


def test_fit_recovers_a_known_linear_map_and_reports_no_residual():
    rng = np.random.default_rng(0)
    source = rng.normal(size=(200, 5)).astype(np.float32)
    true_map = rng.normal(size=(5, 3)).astype(np.float32)
    fit = fit_linear_map(source, source @ true_map)
    np.testing.assert_allclose(fit.weight, true_map, atol=1e-5)
    assert fit.shared_words == 200 and fit.relative_residual < 1e-6
    with pytest.raises(ValueError, match="at least 5 words"):
        fit_linear_map(source[:3], source[:3] @ true_map)


@pytest.mark.slow
def test_a_table_equal_to_glove_gives_the_identity_map_and_oov_words_their_exact_glove_vector():
    index, vectors = load_glove()
    words = ["the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far", "river", "old", "man"] * 1
    vocab = Vocab(list(SPECIALS) + words + [w for w in list(index)[100:400] if w not in words])
    emb = WordEmbedding(vocab, 50, embedding_init="glove", freeze_embeddings=True)
    bigger, fits = expand_embeddings([emb], vocab)
    np.testing.assert_allclose(fits[0].weight, np.eye(50), atol=1e-4)
    assert bigger.itos[: len(vocab)] == vocab.itos and len(bigger) > len(vocab)
    word = "zebra"
    assert word not in vocab.stoi and word in bigger.stoi
    got = emb(torch.tensor([[bigger.stoi[word], vocab.stoi["cat"]]]))[0]
    np.testing.assert_allclose(got[0].numpy(), vectors[index[word]], atol=1e-4)
    np.testing.assert_array_equal(got[1].numpy(), vectors[index["cat"]])  # trained rows are untouched


@pytest.mark.slow
def test_encode_gives_an_oov_word_its_expanded_vector_not_unk():
    index, _ = load_glove()
    vocab = Vocab(list(SPECIALS) + list(index)[:300])
    torch.manual_seed(0)
    model = SentenceModel(encoder=BOW_GLOVE_FROZEN, objective=None, vocab=vocab,
                          tokenizer={"kind": "whitespace", "lowercase": True})
    assert "zebra" not in vocab.stoi
    before = model.encode(["zebra"])[0]
    assert model.oov_rate(["zebra the"]) == 0.5
    np.testing.assert_allclose(before, model.objective.f.embedding.weight[UNK_ID].detach().numpy(), atol=1e-6)
    info = model.expand_vocabulary()
    assert info["added_words"] > 390_000 and info["relative_residual"] == [0.0]
    after = model.encode(["zebra"])[0]
    np.testing.assert_allclose(after, load_glove()[1][index["zebra"]], atol=1e-4)
    assert model.oov_rate(["zebra the"]) == 0.0
    assert model.oov_rate(["zzqxv_not_a_word the"]) == 0.5  # GloVe does not know it either
    assert model.describe()["vocabulary_expansion"]["added_words"] == info["added_words"]


def test_clearing_the_expansion_restores_unk_and_the_callback_leaves_none_behind():
    index, _ = load_glove()
    vocab = Vocab(list(SPECIALS) + list(index)[:300])
    model = SentenceModel(encoder=BOW_GLOVE_FROZEN, objective=None, vocab=vocab,
                          tokenizer={"kind": "whitespace", "lowercase": True})
    before = model.encode(["zebra"])
    model.expand_vocabulary()
    assert not np.allclose(model.encode(["zebra"]), before)
    model.clear_vocabulary_expansion()
    np.testing.assert_array_equal(model.encode(["zebra"]), before)
    assert model.encode_vocab is model.vocab and model.expansion is None
    assert model.objective.f.embedding.extra_rows.numel() == 0
