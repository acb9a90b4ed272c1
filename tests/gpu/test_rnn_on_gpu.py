"""On CUDA the recurrent encoders run a batch packed, every layer and direction in one cuDNN call, and get torch's
own packed run (``nn.LSTM`` / ``nn.GRU`` on a ``PackedSequence``) and the CPU's padded path, on the same GPU."""
from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from sentence_lab.encoders.rnn import run_rnn

pytestmark = [pytest.mark.gpu, pytest.mark.slow]

FLOAT32_TOLERANCE = 1e-5  # absolute, on states of magnitude below 1 (TF32 off: tests/gpu/conftest.py)


def kernel_calls(monkeypatch, cell: str) -> list[int]:
    """The number of rows of every call of torch's fused ``cell`` kernel ("lstm" or "gru")."""
    seen = []
    original = getattr(torch._VF, cell)

    def spy(inp, *args):
        seen.append(inp.shape[0])
        return original(inp, *args)

    monkeypatch.setattr(torch._VF, cell, spy)
    return seen


def batch(rows: int, tokens: int, features: int) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    lengths = torch.randint(1, tokens + 1, (rows,))
    lengths[0] = tokens
    x = torch.randn(rows, tokens, features, device="cuda")
    x[(torch.arange(tokens)[None, :] >= lengths[:, None]).cuda()] = 100.0  # loud padding must not leak
    return x, lengths


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU])
def test_on_cuda_a_batch_runs_packed_in_one_call_and_equals_torchs_packed_run(cell, monkeypatch, record_property):
    rnn = cell(12, 16, num_layers=2, bidirectional=True, batch_first=True).cuda()
    x, lengths = batch(70, 9, 12)
    calls = kernel_calls(monkeypatch, "lstm" if cell is nn.LSTM else "gru")
    states, final = run_rnn(rnn, x, lengths)
    assert len(calls) == 1 and states.is_cuda and final.is_cuda

    ref_out, ref_h = rnn(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
    ref_states, _ = pad_packed_sequence(ref_out, batch_first=True, total_length=9)
    ref_h = ref_h[0] if cell is nn.LSTM else ref_h
    real = (torch.arange(9)[None, :] < lengths[:, None]).cuda()[:, :, None]
    torch.testing.assert_close(states * real, ref_states, atol=FLOAT32_TOLERANCE, rtol=0)
    torch.testing.assert_close(final, torch.cat(list(ref_h[-2:]), dim=1), atol=FLOAT32_TOLERANCE, rtol=0)

    padded_states, padded_final = run_rnn(rnn, x, lengths, packed=False)  # the CPU's path (buckets), on the GPU
    record_property(f"{cell.__name__}_packed_minus_padded", float((final - padded_final).abs().max()))
    torch.testing.assert_close(states * real, padded_states * real, atol=FLOAT32_TOLERANCE, rtol=0)
    torch.testing.assert_close(final, padded_final, atol=FLOAT32_TOLERANCE, rtol=0)


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU])
def test_on_cuda_under_bf16_autocast_the_packed_run_is_bfloat16_and_trains_float32_weights(cell):
    rnn = cell(12, 16, bidirectional=True, batch_first=True).cuda()
    x, lengths = batch(40, 9, 12)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        states, final = run_rnn(rnn, x, lengths)
    assert states.dtype == final.dtype == torch.bfloat16
    reference, _ = run_rnn(rnn, x, lengths)
    real = (torch.arange(9)[None, :] < lengths[:, None]).cuda()
    torch.testing.assert_close(states[real].float(), reference[real], rtol=2e-2, atol=2e-2)
    final.float().sum().backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float32 and p.grad.abs().sum() > 0
               for p in rnn.parameters())
