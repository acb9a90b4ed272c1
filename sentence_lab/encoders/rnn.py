"""Run a torch RNN over right-padded sentences, exactly as over packed ones: on a GPU packed, elsewhere faster.

On CUDA the batch is packed and cuDNN runs every layer and direction of it in one call over the layer's flattened
weights (cuDNN's kernels take packed, mixed-length batches natively); the batch is packed and unpacked by one row
gather each, not by torch's ``pack_padded_sequence``/``pad_packed_sequence``, which copy a slice a time step (a kernel
launch each way per step on a GPU; the states and gradients are the same to the bit, ``tests/encoders/test_rnn.py``).
The rest of this docstring is the CPU's path.

Packed sequences force PyTorch's step-by-step RNN kernel. Here each direction runs on the padded
batch instead (which takes oneDNN's fused RNN kernels on CPU): the forward direction reads the real
tokens before any padding, and the backward direction reads each sentence reversed *within its
length*, so padding again only comes after the real tokens. Real positions therefore get exactly
the states that packing gives; padded positions hold values nobody may read.

A fused kernel still computes every padded position, and a batch of contiguous book sentences (18.7
tokens on average, the longest 50) is mostly padding. So a large batch runs in length buckets: its
sentences sorted by length, cut into groups of about ``bucket_rows``, each group trimmed to its own
longest sentence. Every sentence gets the states it gets alone; the cost follows the real tokens
(measured when the buckets came in: ``docs/changelog.md``, "The recurrent encoders run a batch in length buckets";
``benchmarks/train_throughput.py`` times whole training steps). A batch whose lengths are alike already
(evaluation's length-sorted batches) runs whole.

Under autocast to bfloat16 (``trainer.precision=bf16-mixed``) the recurrent kernel runs in bfloat16, outside
autocast: PyTorch's autocast sends cuDNN's LSTM and GRU to float16 whatever dtype it was given (measured on an H100
with torch 2.11: ``benchmarks/gpu_rnn_precision.py``), which would train them in float16 with no loss scaling; and on
the CPU it leaves the GRU in float32.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def reversal_index(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """``[B, T]`` time index that reverses positions ``0..len-1`` of each row and keeps the padding."""
    t = torch.arange(max_len, device=lengths.device)[None, :]
    lengths = lengths.to(t.device)[:, None]
    return torch.where(t < lengths, lengths - 1 - t, t)


def _gather_time(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return x.gather(1, index[:, :, None].expand(-1, -1, x.size(2)))


# Sentences per length bucket: fused-kernel products stay large enough to run near the matmul peak.
BUCKET_ROWS = 32
# Buckets run only when they cut the padded steps to at most this share of the whole batch's.
SAVING_NEEDED = 0.8


def kernel_dtype(x: torch.Tensor) -> torch.dtype | None:
    """bfloat16 when autocast to bfloat16 is on for ``x``'s device (the kernel then runs outside autocast, in
    bfloat16); None otherwise (the kernel runs as called)."""
    device = x.device.type
    if not torch.amp.is_autocast_available(device):  # e.g. meta tensors
        return None
    if torch.is_autocast_enabled(device) and torch.get_autocast_dtype(device) == torch.bfloat16:
        return torch.bfloat16
    return None


@dataclass(frozen=True)
class OneLayer:
    """Layer ``index`` of a multi-layer ``nn.LSTM``/``nn.GRU``, as the runners below read an RNN: its settings, one
    layer deep (its weights are the slice of the RNN's that ``run_rnn_layers`` passes)."""

    mode: str
    hidden_size: int
    bidirectional: bool
    bias: bool
    training: bool
    num_layers: int = 1
    dropout: float = 0.0


Recurrent = nn.LSTM | nn.GRU | OneLayer


def run_rnn(rnn: nn.LSTM | nn.GRU, x: torch.Tensor, lengths: torch.Tensor,
            bucket_rows: int | None = BUCKET_ROWS, packed: bool | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """States ``[B, T, D*H]`` of the top layer and the final state ``[B, D*H]`` of each direction.

    The final forward state is the one after the last real token; the final backward state is the
    one after reading back to the first token; both as ``rnn`` would give on packed input. ``packed``
    (``None``: on CUDA) runs the batch packed in one kernel call; otherwise each direction runs padded,
    batches of more than ``bucket_rows`` sentences in length buckets (``None``: the whole batch at once).
    """
    run, dtype = _runner(rnn, x, bucket_rows, packed, "run_rnn")
    if dtype is not None:
        with torch.autocast(x.device.type, enabled=False):
            weights = [w.to(dtype) for w in cast(list[torch.Tensor], rnn._flat_weights)]  # cast once for every bucket
            return run(rnn, x.to(dtype), lengths, weights=weights)
    return run(rnn, x, lengths, weights=cast(list[torch.Tensor], rnn._flat_weights))


def run_rnn_layers(rnn: nn.LSTM | nn.GRU, x: torch.Tensor, lengths: torch.Tensor,
                   bucket_rows: int | None = BUCKET_ROWS, packed: bool | None = None
                   ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``run_rnn``'s states and final states for every layer, bottom first: the layers run one by one, each as a
    one-layer RNN over the layer below's states (the last entry is ``run_rnn``'s result; the probing suite's
    per-layer view, ``sentence_lab.evaluation.vectors.layer_store``). Training never runs this: ``run_rnn`` runs every
    layer in one kernel call on the GPU."""
    run, dtype = _runner(rnn, x, bucket_rows, packed, "run_rnn_layers")
    weights = cast(list[torch.Tensor], rnn._flat_weights)
    per_layer = len(weights) // rnn.num_layers
    layer_input, out = x, []
    with torch.autocast(x.device.type, enabled=False) if dtype is not None else contextlib.nullcontext():
        for layer in range(rnn.num_layers):
            one = OneLayer(rnn.mode, rnn.hidden_size, rnn.bidirectional, rnn.bias, rnn.training)
            layer_weights = weights[layer * per_layer:(layer + 1) * per_layer]
            if dtype is not None:
                layer_input, layer_weights = layer_input.to(dtype), [w.to(dtype) for w in layer_weights]
            states, final = run(one, layer_input, lengths, weights=layer_weights)
            out.append((states, final))
            layer_input = states
            if rnn.dropout and rnn.training and layer < rnn.num_layers - 1:
                layer_input = F.dropout(layer_input, rnn.dropout, training=True)
    return out


def _runner(rnn: nn.LSTM | nn.GRU, x: torch.Tensor, bucket_rows: int | None, packed: bool | None,
            caller: str) -> tuple[Callable[..., tuple[torch.Tensor, torch.Tensor]], torch.dtype | None]:
    """How ``caller`` runs ``rnn`` on ``x``: packed in one kernel call (``packed``; ``None``: on CUDA) or padded in
    length buckets, and the dtype to cast to for the kernel (``kernel_dtype``; ``None``: as it is)."""
    if rnn.proj_size if isinstance(rnn, nn.LSTM) else False:
        raise ValueError(f"LSTM projections (proj_size) are not supported by {caller}")
    run = _run_packed if (x.is_cuda if packed is None else packed) else functools.partial(
        _run_buckets, bucket_rows=bucket_rows)
    return run, kernel_dtype(x)


def _run_packed(rnn: Recurrent, x: torch.Tensor, lengths: torch.Tensor,
                weights: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """``run_rnn`` on the batch packed: every layer and direction in one kernel call (padded states are zero). The
    batch is packed and unpacked by one row gather each (:class:`PackIndex`), where torch's ``pack_padded_sequence``
    and ``pad_packed_sequence`` copy a slice a time step (on a GPU a kernel launch each way per step)."""
    is_lstm = rnn.mode == "LSTM"
    directions = 2 if rnn.bidirectional else 1
    index = PackIndex.of(lengths, x.size(1), x.device)
    data = x.reshape(-1, x.size(2)).index_select(0, index.pack)
    h0 = x.new_zeros(rnn.num_layers * directions, x.size(0), rnn.hidden_size)
    settings = (rnn.bias, rnn.num_layers, float(rnn.dropout), rnn.training, rnn.bidirectional)
    out = (torch._VF.lstm(data, index.batch_sizes, (h0, h0), weights, *settings) if is_lstm else
           torch._VF.gru(data, index.batch_sizes, h0, weights, *settings))
    states = torch.cat([out[0], out[0].new_zeros(1, out[0].size(1))]).index_select(0, index.unpack)
    top = out[1][-directions:].index_select(1, index.rank)  # final states of the top layer, in batch order
    return states.view(x.size(0), x.size(1), -1), torch.cat(list(top), dim=1)


@dataclass(frozen=True)
class PackIndex:
    """Where each row of a packed batch comes from and goes back to, worked out on the host from the lengths: the
    sentences sorted longest first (stable), time-major. ``pack [N]``: the padded batch's row ``b * T + t`` of each
    packed row; ``unpack [B * T]``: the packed row of each padded position (``N``, a zero row, for padding);
    ``rank [B]``: each sentence's place in the sorted batch; ``batch_sizes``: on the host, as the kernel wants it."""

    pack: torch.Tensor
    unpack: torch.Tensor
    rank: torch.Tensor
    batch_sizes: torch.Tensor

    @classmethod
    def of(cls, lengths: torch.Tensor, total_length: int, device: torch.device) -> PackIndex:
        lens = lengths.cpu().numpy().astype(np.int64)
        if lens.min(initial=1) < 1 or lens.max(initial=0) > total_length:
            raise ValueError(f"lengths must lie in 1..{total_length} to pack a batch, got {lens.tolist()}")
        order = np.argsort(-lens, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        steps = np.arange(int(lens.max(initial=0)))
        batch_sizes = (lens[None, :] > steps[:, None]).sum(1)
        t, i = np.nonzero(lens[order][None, :] > steps[:, None])  # packed rows, time-major, sorted within a step
        offsets = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]]).astype(np.int64)
        unpack = np.full((len(lens), total_length), len(t), dtype=np.int64)
        b = order[i]  # the sentence of each packed row
        unpack[b, t] = offsets[t] + i
        joined = torch.from_numpy(np.concatenate([b * total_length + t, unpack.reshape(-1), rank]))
        joined = joined.to(device, non_blocking=True)  # one copy to the device
        n, m = len(t), unpack.size
        return cls(joined[:n], joined[n : n + m], joined[n + m :], torch.from_numpy(batch_sizes))


def _run_buckets(rnn: Recurrent, x: torch.Tensor, lengths: torch.Tensor, weights: list[torch.Tensor],
                 bucket_rows: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``run_rnn`` with the layer's ``weights`` given (in the dtype the kernel runs in)."""
    if not bucket_rows or x.size(0) <= bucket_rows:
        return _run_padded(rnn, x, lengths, weights)
    lengths = lengths.to(x.device)
    order = torch.argsort(lengths, stable=True)
    buckets = order.tensor_split(-(-x.size(0) // bucket_rows))
    sorted_lengths = lengths[order].tolist()  # one device sync; a bucket's longest sentence is its last
    longest_of = [sorted_lengths[end - 1] for end in itertools.accumulate(len(rows) for rows in buckets)]
    max_len = x.size(1)
    if sum(len(rows) * n for rows, n in zip(buckets, longest_of)) > SAVING_NEEDED * x.size(0) * max_len:
        return _run_padded(rnn, x, lengths, weights)  # lengths alike (e.g. length-sorted evaluation batches): one run
    states, finals = [], []
    for rows, longest in zip(buckets, longest_of):
        bucket_states, bucket_final = _run_padded(rnn, x[rows, :longest], lengths[rows], weights)
        states.append(F.pad(bucket_states, (0, 0, 0, max_len - longest)))
        finals.append(bucket_final)
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(order.numel(), device=order.device)
    return torch.cat(states)[inverse], torch.cat(finals)[inverse]


def _run_padded(rnn: Recurrent, x: torch.Tensor, lengths: torch.Tensor,
                weights: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """``run_rnn`` on the whole padded batch at once."""
    is_lstm = rnn.mode == "LSTM"
    directions = 2 if rnn.bidirectional else 1
    batch, max_len, _ = x.shape
    hidden = rnn.hidden_size
    per_direction = len(weights) // (rnn.num_layers * directions)
    reverse = reversal_index(lengths, max_len) if directions == 2 else None
    layer_input = x
    for layer in range(rnn.num_layers):
        outputs = []
        for direction in range(directions):
            start = (layer * directions + direction) * per_direction
            params = weights[start : start + per_direction]
            inp = layer_input if reverse is None or direction == 0 else _gather_time(layer_input, reverse)
            h0 = x.new_zeros(1, batch, hidden)
            if is_lstm:
                out = torch._VF.lstm(inp, (h0, h0), params, rnn.bias, 1, 0.0, rnn.training, False, True)[0]
            else:
                out = torch._VF.gru(inp, h0, params, rnn.bias, 1, 0.0, rnn.training, False, True)[0]
            outputs.append(out if reverse is None or direction == 0 else _gather_time(out, reverse))
        layer_input = torch.cat(outputs, dim=2) if directions == 2 else outputs[0]
        if rnn.dropout and rnn.training and layer < rnn.num_layers - 1:
            layer_input = F.dropout(layer_input, rnn.dropout, training=True)
    states = layer_input
    last = (lengths.to(states.device) - 1)[:, None, None].expand(-1, 1, hidden)
    final = [states[:, :, :hidden].gather(1, last).squeeze(1)]
    if directions == 2:
        final.append(states[:, 0, hidden:])
    return states, torch.cat(final, dim=1)
