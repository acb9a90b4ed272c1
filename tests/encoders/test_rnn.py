"""run_rnn on padded input equals the same RNN over packed sequences."""
import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from encoders.rnn import reversal_index, run_rnn


def test_reversal_index_reverses_within_each_length_only():
    assert reversal_index(torch.tensor([3, 1, 4]), 4).tolist() == [[2, 1, 0, 3], [0, 1, 2, 3], [3, 2, 1, 0]]


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU])
@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_layers", [1, 2])
def test_padded_run_equals_packed_run(cell, bidirectional, num_layers):
    torch.manual_seed(0)
    rnn = cell(6, 5, num_layers=num_layers, bidirectional=bidirectional, batch_first=True)
    lengths = torch.tensor([4, 7, 1, 5])
    x = torch.randn(4, 7, 6)
    x[torch.arange(7)[None, :] >= lengths[:, None]] = 100.0  # loud padding must not leak
    states, final = run_rnn(rnn, x, lengths)

    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    ref_out, ref_h = rnn(packed)
    ref_states, _ = pad_packed_sequence(ref_out, batch_first=True, total_length=7)
    ref_h = ref_h[0] if cell is nn.LSTM else ref_h
    ref_final = torch.cat(list(ref_h[-(2 if bidirectional else 1):]), dim=1)

    real = (torch.arange(7)[None, :] < lengths[:, None])[:, :, None]
    torch.testing.assert_close(states * real, ref_states, atol=1e-5, rtol=0)
    torch.testing.assert_close(final, ref_final, atol=1e-5, rtol=0)


def test_gradients_flow_to_both_directions():
    rnn = nn.LSTM(3, 4, bidirectional=True, batch_first=True)
    _, final = run_rnn(rnn, torch.randn(2, 5, 3), torch.tensor([5, 2]))
    final.sum().backward()
    assert rnn.weight_ih_l0.grad.abs().sum() > 0 and rnn.weight_ih_l0_reverse.grad.abs().sum() > 0
