"""GRU encoder: the vector is the final hidden state of the real tokens."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from sentence_lab.encoders.gru import GRUEncoder, xavier_gru_
from sentence_lab.text.padding import pad_batch


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
    enc = GRUEncoder(vocab, embed_dim=6, hidden_dim=4, weight_init="xavier", embedding_init="random")
    h = 4
    effective = (enc.gru.bias_ih_l0 + enc.gru.bias_hh_l0).detach()  # PyTorch adds the two in every gate
    assert torch.equal(effective[: 2 * h], torch.ones(2 * h)) and torch.equal(effective[2 * h:], torch.zeros(h))
    for name, param in enc.gru.named_parameters():
        if name.startswith("weight"):
            fan_in = param.shape[1]
            bound = math.sqrt(6.0 / (fan_in + h))
            assert param.abs().max() <= bound and param.abs().max() > bound / 2
    with pytest.raises(ValueError, match="weight_init"):
        GRUEncoder(vocab, embed_dim=6, hidden_dim=4, weight_init="orthogonal")

# Quick-Thoughts' GRU initialisation (Logeswaran & Lee 2018, section 4.3): gate biases 1.
def test_the_update_gate_sees_a_bias_of_one_not_two():
    """With the weights zeroed and a zero input, the GRU's equations give h' = (1 - z) * tanh(b_in + r * b_hn) + z * h
    with z = sigmoid(b_iz + b_hz) and the candidate's biases 0: h' = sigmoid(1) * h for an effective bias of 1."""
    torch.manual_seed(0)
    gru = nn.GRU(input_size=3, hidden_size=4, batch_first=True)
    xavier_gru_(gru)
    with torch.no_grad():
        gru.weight_ih_l0.zero_()
        gru.weight_hh_l0.zero_()
    h0 = torch.tensor([[[0.5, -1.0, 2.0, 0.25]]])
    _, h1 = gru(torch.zeros(1, 1, 3), h0)
    torch.testing.assert_close(h1 / h0, torch.full_like(h0, 1 / (1 + math.exp(-1.0))), rtol=0, atol=1e-6)
