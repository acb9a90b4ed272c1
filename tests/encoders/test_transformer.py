"""``encoder=transformer`` against independent transcriptions: attention as Vaswani et al. 2017 write it (eq. 1,
softmax(QK^T / sqrt(d_k)) V, per head, the pads taken out of the keys), the sinusoids of their section 3.5, the
pre-LayerNorm block of Xiong et al. 2020; a sentence's vector whatever its batch; every layer readable."""
from __future__ import annotations

import math

import pytest
import torch

from sentence_lab.encoders.base import layers_of
from sentence_lab.encoders.buckets import plan_buckets
from sentence_lab.encoders.transformer import TransformerEncoder
from sentence_lab.encoders.transformer.blocks import PreNormBlock, SelfAttention
from sentence_lab.encoders.transformer.positions import sinusoids
from sentence_lab.text.padding import pad_batch

SENTENCES = [[4, 5, 6, 7], [8], [9, 10, 4, 5, 6, 7, 8, 9, 10, 11, 12, 4, 5], [11, 12], [4, 4, 4]]


def encoder(vocab, **settings) -> TransformerEncoder:
    options = {"embed_dim": 16, "d_model": 16, "num_layers": 3, "num_heads": 4, "ffn_dim": 32, "dropout": 0.1,
               "attention_dropout": 0.1} | settings
    return TransformerEncoder(vocab, **options).eval()


def attention_by_hand(attention: SelfAttention, x: torch.Tensor, length: int) -> torch.Tensor:
    """One sentence ``[T, D]`` of which the first ``length`` positions are real: each head's
    softmax(q k^T / sqrt(d_k)) v over the real keys, heads concatenated, then the output projection."""
    d = x.size(-1)
    h = attention.num_heads
    q, k, v = (x @ w.T + b for w, b in zip(attention.qkv.weight.split(d), attention.qkv.bias.split(d)))
    heads = []
    for i in range(h):
        cols = slice(i * d // h, (i + 1) * d // h)
        scores = q[:, cols] @ k[:length, cols].T / math.sqrt(d // h)
        heads.append(torch.softmax(scores, dim=-1) @ v[:length, cols])
    return torch.cat(heads, dim=-1) @ attention.out.weight.T + attention.out.bias


def test_attention_is_the_papers_equation_with_the_pads_out_of_the_keys():
    torch.manual_seed(0)
    attention = SelfAttention(12, 3).eval()
    x = torch.randn(2, 6, 12)
    lengths = torch.tensor([6, 4])
    keys = torch.arange(6)[None, :] < lengths[:, None]
    got = attention(x, keys)
    for row, length in enumerate(lengths.tolist()):
        assert torch.allclose(got[row], attention_by_hand(attention, x[row], length), atol=1e-5)


def test_a_block_is_pre_layernorm():
    torch.manual_seed(0)
    block = PreNormBlock(8, 2, 16).eval()
    x, keys = torch.randn(1, 5, 8), torch.ones(1, 5, dtype=torch.bool)
    mid = x + attention_by_hand(block.attention, block.attention_norm(x[0]), 5)[None]
    ffn = block.ffn[2](torch.nn.functional.gelu(block.ffn[0](block.ffn_norm(mid))))
    assert torch.allclose(block(x, keys), mid + ffn, atol=1e-5)


def test_the_sinusoids_are_section_3_5s():
    table = sinusoids(50, 6)
    for pos in (0, 1, 7, 49):
        for i in range(3):
            assert table[pos, 2 * i].item() == pytest.approx(math.sin(pos / 10000 ** (2 * i / 6)), abs=1e-6)
            assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(pos / 10000 ** (2 * i / 6)), abs=1e-6)


@pytest.mark.parametrize("pooling", ["mean", "max", "cls"])
@pytest.mark.parametrize("positions", ["sinusoidal", "learned"])
def test_padding_never_changes_a_vector(vocab, pooling, positions):
    """Each sentence alone, and in a batch beside one three times its length: the same vector."""
    model = encoder(vocab, pooling=pooling, positions=positions, embed_dim=8)  # projected to d_model
    tokens, lengths = pad_batch(SENTENCES)
    with torch.no_grad():
        together = model(tokens, lengths)
        for row, sentence in enumerate(SENTENCES):
            alone = model(*pad_batch([sentence]))
            assert torch.allclose(together[row], alone[0], atol=1e-5), (pooling, row)


@pytest.mark.parametrize("pooling", ["mean", "max", "cls"])
def test_length_buckets_give_the_whole_batchs_vectors_layers_and_gradients(vocab, pooling):
    """A batch of 40 sentences of 1 to 13 tokens in buckets of 8: the vectors, every layer and the gradient of the
    words' projection as the batch padded whole gives them."""
    sentences = [SENTENCES[i % 5][: 1 + (7 * i) % 13] for i in range(40)]
    tokens, lengths = pad_batch(sentences)
    assert plan_buckets(lengths, int(lengths.max()), 8) is not None  # the buckets do run
    results = []
    for bucket_rows in (None, 8):
        torch.manual_seed(0)
        model = encoder(vocab, pooling=pooling, embed_dim=8, bucket_rows=bucket_rows)
        vectors = model(tokens, lengths)
        vectors.pow(2).sum().backward()
        with torch.no_grad():
            layers = layers_of(model, tokens, lengths)
        results.append((vectors.detach(), layers, model.projection.weight.grad.clone()))
    (whole, whole_layers, whole_grad), (bucketed, bucketed_layers, bucketed_grad) = results
    assert torch.allclose(whole, bucketed, atol=1e-5)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(whole_layers, bucketed_layers))
    assert torch.allclose(whole_grad, bucketed_grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("pooling", ["mean", "max", "cls"])
def test_every_layer_is_readable_and_the_last_is_the_vector(vocab, pooling):
    model = encoder(vocab, pooling=pooling)
    tokens, lengths = pad_batch(SENTENCES)
    with torch.no_grad():
        layers = layers_of(model, tokens, lengths)
        vector = model(tokens, lengths)
        inputs, _, _ = model._inputs(tokens, lengths)
    assert len(layers) == 4 and all(layer.shape == (5, 16) for layer in layers)
    assert torch.allclose(layers[-1], vector, atol=1e-6)
    words = inputs[:, 1:] if pooling == "cls" else inputs  # layer 0: the word vectors with their positions
    real = (torch.arange(words.size(1))[None, :] < lengths[:, None])[:, :, None]
    expected = words.masked_fill(~real, float("-inf")).amax(1) if pooling == "max" else \
        (words * real).sum(1) / lengths[:, None]
    assert torch.allclose(layers[0], expected, atol=1e-6)


def test_dropout_gives_two_views_in_training_and_the_gradient_reaches_the_words(vocab):
    model = encoder(vocab, embedding_init="random").train()
    tokens, lengths = pad_batch(SENTENCES)
    a, b = model(tokens, lengths), model(tokens, lengths)
    assert not torch.allclose(a, b)
    (a - b).pow(2).sum().backward()
    assert model.embedding.weight.grad is not None and model.embedding.weight.grad.abs().sum() > 0


def test_bf16_autocast_runs_and_stays_close(vocab):
    model = encoder(vocab)
    tokens, lengths = pad_batch(SENTENCES)
    with torch.no_grad():
        full = model(tokens, lengths)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            half = model(tokens, lengths)
    assert torch.allclose(half.float(), full, atol=0.1)


def test_bad_settings_are_one_line(vocab):
    with pytest.raises(ValueError, match="d_model=10 is not a multiple of num_heads=4"):
        encoder(vocab, d_model=10, embed_dim=10)
    with pytest.raises(ValueError, match="unknown pooling 'last'"):
        encoder(vocab, pooling="last")
    with pytest.raises(ValueError, match="unknown positions 'rotary'"):
        encoder(vocab, positions="rotary")
    with pytest.raises(ValueError, match="longer than encoder.max_positions=4"):
        encoder(vocab, max_positions=4)(*pad_batch([[4, 5, 6, 7, 8]]))
