"""A training step's FLOPs, counted by torch's ``FlopCounterMode`` with oneDNN's fused recurrent layer added."""
from __future__ import annotations

from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode


def _mkldnn_rnn_flops(input_shape, w_ih_shape, w_hh_shape, *args, **kwargs) -> int:
    """oneDNN's fused RNN layer (CPU LSTM), which FlopCounterMode does not know: 2 FLOPs per MAC of
    both gate projections at every (padded) position."""
    positions = input_shape[0] * input_shape[1]
    return 2 * positions * w_ih_shape[0] * (w_ih_shape[1] + w_hh_shape[1])


def _mkldnn_rnn_backward_flops(input_shape, w_ih_shape, w_hh_shape, *args, **kwargs) -> int:
    return 2 * _mkldnn_rnn_flops(input_shape, w_ih_shape, w_hh_shape)  # input and weight gradients


CUSTOM_FLOPS = {}
if hasattr(torch.ops.aten, "mkldnn_rnn_layer"):
    CUSTOM_FLOPS[torch.ops.aten.mkldnn_rnn_layer] = _mkldnn_rnn_flops
    CUSTOM_FLOPS[torch.ops.aten.mkldnn_rnn_layer_backward] = _mkldnn_rnn_backward_flops


def training_step_flops(model: Any, batch: dict) -> int:
    """FLOPs of one training step's forward and backward (``model.objective(batch)["loss"]``), counted by torch's
    FlopCounterMode on a model on the CPU (its recurrent layers counted as above; cuDNN's are not known to the
    counter, so count on a CPU copy of a GPU model)."""
    counter = FlopCounterMode(display=False, custom_mapping=CUSTOM_FLOPS)
    with counter:
        model.objective(batch)["loss"].backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops()
