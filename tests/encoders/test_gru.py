"""GRU encoder: the vector is the final hidden state of the real tokens."""
from __future__ import annotations

import torch

from datamodules.text import pad_batch
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
