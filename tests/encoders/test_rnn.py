"""run_rnn on padded input equals the same RNN over packed sequences."""
import copy

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from lib.dispatch_counts import Dispatched, RecurrentCallsAsOne
from sentence_lab.encoders.rnn import reversal_index, run_rnn


def test_reversal_index_reverses_within_each_length_only():
    assert reversal_index(torch.tensor([3, 1, 4]), 4).tolist() == [[2, 1, 0, 3], [0, 1, 2, 3], [3, 2, 1, 0]]


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU])
@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bucket_rows", ["packed", None, 2, 3])
def test_run_rnn_equals_torchs_packed_run(cell, bidirectional, num_layers, bucket_rows):
    """Packed in one kernel call (the GPU's path, here on the CPU), or padded: the whole batch at once (None) or in
    length buckets of 2 or 3 sentences (the last one shorter)."""
    torch.manual_seed(0)
    rnn = cell(6, 5, num_layers=num_layers, bidirectional=bidirectional, batch_first=True)
    lengths = torch.tensor([4, 7, 1, 5, 2, 7, 3])
    x = torch.randn(7, 7, 6)
    x[torch.arange(7)[None, :] >= lengths[:, None]] = 100.0  # loud padding must not leak
    packed = bucket_rows == "packed"
    states, final = run_rnn(rnn, x, lengths, bucket_rows=None if packed else bucket_rows, packed=packed)

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


@pytest.mark.slow
def test_buckets_and_the_packed_run_give_the_gradients_of_the_whole_batch():
    torch.manual_seed(0)
    lengths = torch.tensor([6, 2, 5, 1, 6, 3, 4, 2])
    x = torch.randn(8, 6, 3)
    grads = []
    for bucket_rows, packed in ((None, False), (3, False), (None, True)):
        rnn = nn.LSTM(3, 4, bidirectional=True, batch_first=True)
        torch.manual_seed(1)
        for p in rnn.parameters():
            torch.nn.init.normal_(p)
        states, final = run_rnn(rnn, x, lengths, bucket_rows=bucket_rows, packed=packed)
        real = (torch.arange(6)[None, :] < lengths[:, None])[:, :, None]
        ((states * real).sum() + final.pow(2).sum()).backward()
        grads.append([p.grad for p in rnn.parameters()])
    for whole, *others in zip(*grads):
        for other in others:
            torch.testing.assert_close(other, whole, atol=1e-5, rtol=1e-5)


def kernel_inputs(monkeypatch, cell: str) -> list[tuple[int, int]]:
    """Record the (sentences, steps) of every call of torch's fused ``cell`` kernel ("lstm" or "gru")."""
    seen = []
    original = getattr(torch._VF, cell)

    def spy(inp, *args):
        seen.append(tuple(inp.shape[:2]))
        return original(inp, *args)

    monkeypatch.setattr(torch._VF, cell, spy)
    return seen


def test_a_bucket_is_trimmed_to_its_longest_sentence(monkeypatch):
    """The point of buckets: no bucket runs over more steps than its longest sentence."""
    seen = kernel_inputs(monkeypatch, "lstm")
    rnn = nn.LSTM(3, 4, batch_first=True)
    run_rnn(rnn, torch.randn(6, 9, 3), torch.tensor([9, 1, 2, 1, 2, 8]), bucket_rows=2)
    assert sorted(seen) == [(2, 1), (2, 2), (2, 9)]


def test_a_batch_of_alike_lengths_runs_whole(monkeypatch):
    """Length-sorted evaluation batches gain nothing from buckets: they run as one batch."""
    calls = kernel_inputs(monkeypatch, "gru")
    run_rnn(nn.GRU(3, 4, batch_first=True), torch.randn(6, 9, 3), torch.tensor([8, 9, 9, 8, 9, 9]), bucket_rows=2)
    assert calls == [(6, 9)]


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU])
def test_under_bf16_autocast_the_kernel_runs_in_bfloat16_and_trains_the_float32_weights(cell, packed):
    """PyTorch's autocast would run cuDNN's RNNs in float16 (and leaves the CPU GRU in float32): under autocast to
    bfloat16 the kernel runs in bfloat16 explicitly, as the layer cast to bfloat16 would, on packed input. On the CPU
    only the GRU case fails without it (CPU autocast already runs the LSTM in bfloat16); the GPU tier checks both."""
    torch.manual_seed(0)
    rnn = cell(3, 4, batch_first=True, bidirectional=True)
    x, lengths = torch.randn(6, 9, 3), torch.tensor([9, 1, 2, 1, 2, 8])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        states, final = run_rnn(rnn, x, lengths, bucket_rows=2, packed=packed)
    assert states.dtype == final.dtype == torch.bfloat16
    packed = pack_padded_sequence(x.bfloat16(), lengths, batch_first=True, enforce_sorted=False)
    reference, _ = pad_packed_sequence(copy.deepcopy(rnn).bfloat16()(packed)[0], batch_first=True)
    real = torch.arange(9)[None, :] < lengths[:, None]
    torch.testing.assert_close(states[real].float(), reference[real].float(), rtol=2e-2, atol=2e-2)
    final.float().sum().backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float32 and p.grad.abs().sum() > 0
               for p in rnn.parameters())


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU])
def test_the_packed_path_equals_torchs_pack_and_pad_bit_for_bit_with_its_gradients(cell):
    """One row gather each way instead of torch's copy a time step: the same states (zeros at padding), final states
    and gradients, to the bit, with tied lengths in the batch."""
    torch.manual_seed(0)
    rnn = cell(6, 5, num_layers=2, bidirectional=True, batch_first=True)
    lengths = torch.tensor([4, 7, 1, 4, 2, 7, 4])
    x = torch.randn(7, 8, 6, requires_grad=True)  # wider than the longest sentence: states padded to x's width

    states, final = run_rnn(rnn, x, lengths, packed=True)
    (states.square().sum() + final.sum()).backward()
    ours = [x.grad.clone()] + [p.grad.clone() for p in rnn.parameters()]
    x.grad = None
    rnn.zero_grad()

    ref_out, ref_h = rnn(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
    ref_states, _ = pad_packed_sequence(ref_out, batch_first=True, total_length=8)
    ref_h = ref_h[0] if cell is nn.LSTM else ref_h
    ref_final = torch.cat(list(ref_h[-2:]), dim=1)
    (ref_states.square().sum() + ref_final.sum()).backward()
    assert torch.equal(states, ref_states) and torch.equal(final, ref_final)
    for a, b in zip(ours, [x.grad] + [p.grad for p in rnn.parameters()]):
        assert torch.equal(a, b)


def test_packing_dispatches_the_same_few_kernels_whatever_the_length():
    """torch's pack and pad copy a slice a time step (a kernel launch each on a GPU); a gather does not grow."""
    rnn = nn.LSTM(6, 5, bidirectional=True, batch_first=True)

    def kernels(steps: int) -> int:
        rnn.zero_grad(set_to_none=True)  # no gradient to accumulate into
        x = torch.randn(3, steps, 6, requires_grad=True)
        counter = Dispatched()
        with counter, RecurrentCallsAsOne(counter):
            states, _ = run_rnn(rnn, x, torch.tensor([steps, 2, steps - 1]), packed=True)
            states.sum().backward()
        return counter.kinds["kernels"]

    assert kernels(40) == kernels(5) < 30
