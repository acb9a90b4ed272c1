"""Contract tests run against every encoder config in conf/encoder/."""
from __future__ import annotations

import pytest
import torch
from hydra.utils import instantiate

from sentence_lab.encoders.base import SentenceEncoder
from sentence_lab.encoders.embedding import WordEmbedding
from sentence_lab.text import PAD_ID
from sentence_lab.text.padding import pad_batch

EXPECTED_TRAINABLE = {"bow", "gru", "bigru", "bilstm_max", "bilstm_last", "gatedconv", "transformer"}
# What each paper says (the config's comment cites the section): vector size, layers, width, frozen vectors.
EXPECTED_PAPER_DIMS = {
    "bow_conneau2018": 50,  # BoV: the average of the (here GloVe 50d) word vectors
    "gru_logeswaran2018": 1200,  # QT's uni-GRU, 1200 units (f and g concatenated: 2400)
    "bilstm_max_conneau2018": 1024,  # 2 layers x 512 per direction
    "bilstm_last_conneau2018": 1024,
    "gatedconv_conneau2018": 512,  # 8 layers x 512, kernel 3
    "bilstm_max_conneau2017": 4096,  # InferSent: 2048 per direction
}
FROZEN_PRETRAINED = {"bow_conneau2018", "bilstm_max_conneau2018", "bilstm_last_conneau2018", "gatedconv_conneau2018",
                     "bilstm_max_conneau2017"}


def _sentences(vocab_size: int) -> list[list[int]]:
    """Sentences of lengths 1..7 over non-special ids, deterministic."""
    g = torch.Generator().manual_seed(1)
    return [torch.randint(4, vocab_size, (n,), generator=g).tolist() for n in (3, 7, 1, 5, 2)]


def test_every_expected_config_is_tested(trainable_config_names, paper_config_names) -> None:
    assert EXPECTED_TRAINABLE <= set(trainable_config_names)
    assert set(EXPECTED_PAPER_DIMS) <= set(paper_config_names)


@pytest.mark.parametrize("name", ["bow", "gatedconv"])
def test_instantiate_with_vocab_kwarg(name, vocab, encoder_config) -> None:
    # Hydra turns a dataclass kwarg into a DictConfig; encoders must still see the whole vocabulary.
    encoder = instantiate(encoder_config(name), vocab=vocab)
    assert isinstance(encoder, SentenceEncoder)
    embedding = encoder.embedding
    assert isinstance(embedding, WordEmbedding)  # bow and gatedconv start with the word table
    assert embedding.weight.shape[0] == len(vocab)
    partial = instantiate(encoder_config(name), _partial_=True)(vocab=vocab)
    assert partial.embedding.weight.shape == embedding.weight.shape


def test_output_shape(trainable_config_name, vocab, build_encoder) -> None:
    encoder = build_encoder(trainable_config_name).eval()
    assert isinstance(encoder, SentenceEncoder)
    tokens, lengths = pad_batch(_sentences(len(vocab)))
    out = encoder(tokens, lengths)
    assert out.shape == (5, encoder.output_dim)
    assert out.dtype == torch.float32
    assert torch.isfinite(out).all()


def test_padding_never_changes_a_sentence(trainable_config_name, vocab, build_encoder) -> None:
    encoder = build_encoder(trainable_config_name).eval()
    sentences = _sentences(len(vocab))
    tokens, lengths = pad_batch(sentences)
    # extra all-padding columns beyond the longest sentence must not matter either
    tokens = torch.cat([tokens, torch.full((len(sentences), 3), PAD_ID)], dim=1)
    with torch.no_grad():
        batched = encoder(tokens, lengths)
        for i, sentence in enumerate(sentences):
            alone = encoder(*pad_batch([sentence]))[0]
            torch.testing.assert_close(batched[i], alone, atol=1e-5, rtol=0)


@pytest.mark.slow
def test_gradients_reach_tuned_embeddings(trainable_config_name, vocab, build_encoder) -> None:
    encoder = build_encoder(trainable_config_name, ["freeze_embeddings=false"])
    tokens, lengths = pad_batch(_sentences(len(vocab)))
    encoder(tokens, lengths).pow(2).sum().backward()
    grad = encoder.embedding.weight.grad
    assert grad is not None
    used = torch.unique(tokens[tokens != PAD_ID])
    assert grad[used].abs().sum(dim=1).gt(0).all()
    assert grad[PAD_ID].abs().sum() == 0


def test_frozen_embeddings_get_no_gradient(trainable_config_name, vocab, build_encoder) -> None:
    encoder = build_encoder(trainable_config_name, ["freeze_embeddings=true"])
    assert not encoder.embedding.weight.requires_grad
    tokens, lengths = pad_batch(_sentences(len(vocab)))
    out = encoder(tokens, lengths)
    if out.requires_grad:  # bow has no other parameters, so nothing to backpropagate into
        out.sum().backward()
    assert encoder.embedding.weight.grad is None


def test_pad_row_is_zero(trainable_config_name, vocab, build_encoder) -> None:
    encoder = build_encoder(trainable_config_name)
    assert encoder.embedding.weight[PAD_ID].abs().sum() == 0


@pytest.mark.parametrize("name", sorted(EXPECTED_PAPER_DIMS))
def test_paper_configs_compose_and_instantiate(name, vocab, encoder_config) -> None:
    cfg = encoder_config(name)
    frozen = name in FROZEN_PRETRAINED
    assert (cfg.embedding_init, cfg.freeze_embeddings) == (("glove", True) if frozen else ("random", False))
    if "conneau2018" in name and "bow" not in name:
        assert (cfg.get("num_layers"), cfg.get("hidden_dim", cfg.get("channels"))) in ((2, 512), (8, 512))
    encoder = instantiate(cfg, _partial_=True)(vocab=vocab).eval()
    assert encoder.output_dim == EXPECTED_PAPER_DIMS[name]
    with torch.no_grad():
        out = encoder(*pad_batch([[4, 5, 6], [7]]))
    assert out.shape == (2, EXPECTED_PAPER_DIMS[name])


def test_glove_override_on_a_config(vocab, build_encoder) -> None:
    encoder = build_encoder("bilstm_max", ["embedding_init=glove", "embed_dim=50"])
    assert encoder.embedding.weight.shape == (len(vocab), 50)
