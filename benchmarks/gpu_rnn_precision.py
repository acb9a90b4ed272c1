"""What precision a recurrent layer really runs in on this device, and what each costs (the GPU check, issue 45).

    python benchmarks/gpu_rnn_precision.py            # on a GPU: BiLSTM 2 x 2048 and GRU 1200, batch 400 x 30 tokens
    python benchmarks/gpu_rnn_precision.py --smoke    # any device, tiny sizes

Found on the first GPU check (H100, torch 2.11): under ``torch.autocast(dtype=torch.bfloat16)`` cuDNN's LSTM and GRU
return **float16**, not bfloat16 (PyTorch's autocast wrapper for cuDNN RNNs casts to half whatever dtype autocast was
given), so ``trainer.precision=bf16-mixed`` ran the recurrent encoders in float16 with no loss scaling. The encoders
now run their recurrent kernels outside autocast in bfloat16 when autocast asks for bfloat16
(``sentence_lab/encoders/rnn.py``). Per layer and mode this prints the output dtype, the median seconds of a forward and
backward pass (device synchronised) and the relative difference of the output from float32 (TF32 off) on the same
input:

* ``float32`` / ``tf32``: autocast off, TF32 off / on (cuDNN allows TF32 by default);
* ``autocast bf16``: the layer called under autocast to bfloat16 (what PyTorch does);
* ``bfloat16`` / ``float16``: autocast off, the layer and its input in that dtype;
* ``encoders' path``: the same layer through ``sentence_lab/encoders/rnn.py``'s ``run_rnn`` as the encoders call it
  (on CUDA the batch packed, one kernel call; the weights cast per batch under autocast), in float32 and under
  autocast to bfloat16 (which it runs in bfloat16);
* ``padded path``: ``run_rnn(..., packed=False)``, the CPU's path (a kernel call per direction), on this device.

The figures go to a JSON record (``--output``, default ``logs/benchmarks/gpu_rnn_precision/<time>.json``).
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from lib import records, timing
from sentence_lab.encoders.rnn import run_rnn

ROOT = Path(__file__).resolve().parents[1]
MODES = ("float32", "tf32", "autocast bf16", "bfloat16", "float16", "encoders' path, float32",
         "encoders' path, autocast bf16", "padded path, float32", "padded path, autocast bf16")


def run_mode(layer: nn.LSTM | nn.GRU, x: torch.Tensor, mode: str, repeats: int) -> tuple[torch.Tensor, float]:
    """The layer's output on ``x`` in ``mode`` and the median seconds of a forward and backward pass."""
    device = x.device
    timing.set_tf32(mode == "tf32")
    dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(mode)
    # the layer itself, or run_rnn over it: (states, ...) either way
    module: Callable[[torch.Tensor], tuple[torch.Tensor, Any]] = copy.deepcopy(layer).to(dtype) if dtype else layer
    if mode.startswith(("encoders' path", "padded path")):
        lengths = torch.full((x.size(0),), x.size(1), device=device)
        module = functools.partial(run_rnn, layer, lengths=lengths,
                                   packed=False if mode.startswith("padded") else None)
    inp = x.to(dtype) if dtype else x
    autocast = (torch.autocast(device.type, dtype=torch.bfloat16) if mode.endswith("autocast bf16")
                else contextlib.nullcontext())

    def step() -> torch.Tensor:
        with autocast:
            out = module(inp)[0]
        out.float().square().mean().backward()
        return out

    out = step()
    seconds = timing.median_seconds(step, device, repeats)
    timing.set_tf32(False)
    return out.detach(), seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=10)
    records.add_options(parser, "a BiLSTM of 16 and a GRU of 16 on 8 x 5 tokens")
    args = parser.parse_args(argv)
    run = records.start("gpu_rnn_precision", args, ROOT)
    device = torch.device(args.device)
    batch, tokens = (8, 5) if args.smoke else (400, 30)
    layers: dict[str, nn.LSTM | nn.GRU] = {
        "BiLSTM 2x16": nn.LSTM(8, 16, bidirectional=True, batch_first=True),
        "GRU 16": nn.GRU(8, 16, batch_first=True)} if args.smoke else {
        "BiLSTM 2x2048 (50-d input)": nn.LSTM(50, 2048, bidirectional=True, batch_first=True),
        "GRU 1200 (300-d input)": nn.GRU(300, 1200, batch_first=True)}
    torch.manual_seed(0)
    print(f"{torch.cuda.get_device_name(device) if device.type == 'cuda' else 'CPU'}, torch {torch.__version__}, "
          f"batch {batch} x {tokens} tokens\n\n| layer | mode | output dtype | ms forward + backward | "
          f"relative difference from float32 |\n|---|---|---|---|---|", flush=True)
    rows: list[dict[str, Any]] = []
    for name, layer in layers.items():
        layer = layer.to(device)
        x = torch.randn(batch, tokens, layer.input_size, device=device)
        reference = None
        for mode in MODES:
            try:
                out, seconds = run_mode(layer, x, mode, args.repeats)
            except RuntimeError as err:  # a dtype the backend refuses: recorded
                rows.append({"layer": name, "mode": mode, "error": str(err).splitlines()[0]})
                print(f"| {name} | {mode} | error: {rows[-1]['error'][:80]} | | |", flush=True)
                continue
            if reference is None:
                reference = out.double()
            difference = float((out.double() - reference).norm() / reference.norm())
            rows.append({"layer": name, "mode": mode, "dtype": str(out.dtype).replace("torch.", ""),
                         "seconds": seconds, "relative_difference": difference})
            print(f"| {name} | {mode} | {rows[-1]['dtype']} | {1e3 * seconds:.2f} | {difference:.2e} |", flush=True)
    run.write({"device": str(device), "batch": batch, "tokens": tokens, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
