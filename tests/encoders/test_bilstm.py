"""BiLSTM encoders: max-pooling over time and last states."""
from __future__ import annotations

from typing import Any

import torch

from sentence_lab.encoders import rnn
from sentence_lab.encoders.bilstm import BiLSTMLastEncoder, BiLSTMMaxEncoder
from sentence_lab.text.padding import pad_batch

SENTENCES = [[4, 5, 6], [7, 8, 9, 10, 11], [12]]


def _unpadded_states(enc, sentence: list[int]) -> torch.Tensor:
    """Top-layer states of the BiLSTM on the sentence alone, no packing: [T, 2H]."""
    out, _ = enc.lstm(enc.embedding(torch.tensor([sentence])))
    return out[0]


def test_max_pools_over_real_positions(vocab) -> None:
    enc = BiLSTMMaxEncoder(vocab, embed_dim=8, hidden_dim=4).eval()
    assert enc.output_dim == 8
    with torch.no_grad():
        out = enc(*pad_batch(SENTENCES))
        for i, s in enumerate(SENTENCES):
            torch.testing.assert_close(out[i], _unpadded_states(enc, s).max(dim=0).values)


def test_max_pooling_can_be_negative(vocab) -> None:
    # padded positions hold zeros after unpacking; they must not win the max when all states are < 0
    enc = BiLSTMMaxEncoder(vocab, embed_dim=8, hidden_dim=4).eval()
    with torch.no_grad():
        for p in enc.lstm.parameters():
            p.zero_()
        enc.lstm.get_parameter("bias_ih_l0").fill_(-3.0)  # every gate closed, cell input tanh(-3) < 0
        enc.lstm.get_parameter("bias_ih_l0_reverse").fill_(-3.0)
        out = enc(*pad_batch(SENTENCES))
    assert (out < 0).all()


def test_last_is_final_forward_and_first_backward_state(vocab) -> None:
    enc = BiLSTMLastEncoder(vocab, embed_dim=8, hidden_dim=4, num_layers=2).eval()
    assert enc.output_dim == 8
    with torch.no_grad():
        out = enc(*pad_batch(SENTENCES))
        for i, s in enumerate(SENTENCES):
            states = _unpadded_states(enc, s)
            torch.testing.assert_close(out[i, :4], states[-1, :4])
            torch.testing.assert_close(out[i, 4:], states[0, 4:])


def test_packed_runs_the_batch_packed_on_any_device_with_the_same_vectors(vocab, monkeypatch) -> None:
    calls: list[int] = []
    original = rnn._run_packed

    def counted(*a: Any, **k: Any) -> tuple[torch.Tensor, torch.Tensor]:
        calls.append(1)
        return original(*a, **k)

    monkeypatch.setattr(rnn, "_run_packed", counted)
    torch.manual_seed(0)
    enc = BiLSTMMaxEncoder(vocab, embed_dim=8, hidden_dim=4, num_layers=2).eval()
    with torch.no_grad():
        padded = enc(*pad_batch(SENTENCES))
        assert not calls  # on the CPU the default runs padded
        enc.packed = True
        packed = enc(*pad_batch(SENTENCES))
    assert calls
    torch.testing.assert_close(packed, padded)
