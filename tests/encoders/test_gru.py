"""GRU encoder: the vector is the final hidden state of the real tokens."""
from __future__ import annotations

import pytest
import torch

from text import pad_batch
from encoders.gru import GRUEncoder


def _unpadded_states(enc: GRUEncoder, sentence: list[int]) -> torch.Tensor:
    """Top-layer states of the GRU run on the sentence alone, no packing: [T, dirs * H]."""
    out, _ = enc.gru(enc.embedding(torch.tensor([sentence])))
    return out[0]


def test_unidirectional_is_state_after_last_real_token(vocab) -> None:
    enc = GRUEncoder(vocab, embed_dim=8, hidden_dim=5, num_layers=2).eval()
    assert enc.output_dim == 5
    sentences = [[4, 5, 6, 7], [8, 9]]
    with torch.no_grad():
        out = enc(*pad_batch(sentences))
        for i, s in enumerate(sentences):
            torch.testing.assert_close(out[i], _unpadded_states(enc, s)[-1])


def test_bidirectional_concatenates_last_forward_and_first_backward(vocab) -> None:
    enc = GRUEncoder(vocab, embed_dim=8, hidden_dim=5, bidirectional=True).eval()
    assert enc.output_dim == 10
    sentences = [[4, 5], [6, 7, 8, 9, 10]]
    with torch.no_grad():
        out = enc(*pad_batch(sentences))
        for i, s in enumerate(sentences):
            states = _unpadded_states(enc, s)
            torch.testing.assert_close(out[i, :5], states[-1, :5])
            torch.testing.assert_close(out[i, 5:], states[0, 5:])


def test_xavier_init_sets_gate_biases_to_one_and_bounds_each_gate_block(vocab):
    import math

    from encoders.gru import GRUEncoder

    enc = GRUEncoder(vocab, embed_dim=6, hidden_dim=4, weight_init="xavier", embedding_init="random")
    h = 4
    for name, param in enc.gru.named_parameters():
        if name.startswith("bias"):
            assert torch.equal(param[: 2 * h], torch.ones(2 * h)) and torch.equal(param[2 * h:], torch.zeros(h))
        else:
            fan_in = param.shape[1]
            bound = math.sqrt(6.0 / (fan_in + h))
            assert param.abs().max() <= bound and param.abs().max() > bound / 2
    with pytest.raises(ValueError, match="weight_init"):
        GRUEncoder(vocab, embed_dim=6, hidden_dim=4, weight_init="orthogonal")
