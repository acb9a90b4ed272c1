"""Quick-Thoughts training throughput on this device against its own measured limits (the GPU check, issue 45).

    python benchmarks/gpu_throughput.py                 # on a GPU: three encoders x float32, tf32, bf16-mixed
    python benchmarks/gpu_throughput.py --smoke         # any device, tiny sizes, seconds (the GPU check's dry run)

First the two ceilings, measured here in the same call: the matrix-product rate (square products of random data,
median of timed repeats after warm-up) in float32, tf32 and bf16, and the copy bandwidth (a device-to-device copy,
bytes read plus written). Then, per encoder -- ``gru_logeswaran2018`` (the published QT model: GRU 1200, 300-d
trained word vectors), BiLSTM-max 2 x 2048, the default 2 x 256 (``bilstm_max``, frozen GloVe 50d) and the
transformers trained from scratch (``transformer``: 4 blocks of 256, the default's output size; 2 of 128) -- and per
precision, QT steps on batches of ``--batch-size`` consecutive sentences of the shipped books, in a bare loop (Adam,
clipping 5.0, as the default trainer; the batch copied to the device in the step):

* the FLOPs of one step (forward and backward, torch's FlopCounterMode on a CPU copy of the model and batch: cuDNN's
  recurrent kernels are unknown to the counter) and the fewest bytes it must move (Adam reads the parameters, their
  gradients and two moments and writes three of them: 28 bytes a trainable parameter; the batch once);
* sentences/s (median of the timed batches' rates, device synchronised around each), achieved FLOP/s, and the share
  of the floor: ``max(FLOPs / matmul rate of that precision, bytes / copy bandwidth) / measured seconds``.

``float32`` turns TF32 off for matrix products and cuDNN; ``tf32`` turns it on for both (cuDNN's recurrent and
convolution kernels use TF32 by default in PyTorch: a plain float32 run is the tf32 row unless told otherwise);
``bf16-mixed`` is autocast to bfloat16 with float32 weights, as ``trainer.precision=bf16-mixed``.
Rows of path ``padded`` (``--padded-precisions``) time the recurrent encoders on the CPU's path on this device
(``run_rnn(..., packed=False)``: length buckets, a kernel call per direction) beside the default path (on CUDA: the
batch packed, one cuDNN call), in the same call.
The figures go to a JSON record (``--output``, default ``logs/benchmarks/gpu_throughput/<time>.json``).
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock

import torch
from omegaconf import DictConfig, OmegaConf

from lib import records, smoke_inputs, timing
from lib.flops import training_step_flops
from sentence_lab.datamodules.contiguous import ContiguousChunks
from sentence_lab.datamodules.corpus import CorpusSettings, default_workers, load_corpus
from sentence_lab.encoders import bilstm, gru
from sentence_lab.encoders.rnn import run_rnn
from sentence_lab.text.config_values import plain
from sentence_lab.training.module import SentenceModel

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PROJECT_ROOT", str(ROOT))

# name -> (encoder config, overrides)
ENCODERS = {
    "gru_logeswaran2018": ("gru_logeswaran2018", {}),
    "bilstm_max 2x2048": ("bilstm_max", {"hidden_dim": 2048}),
    "bilstm_max 2x256": ("bilstm_max", {}),
    # encoder=transformer at the default BiLSTM-max's output (QT's f+g: 512-d) and experiment=qt_transformer's size
    "transformer d256x4": ("transformer", {}),
    "transformer d128x2": ("transformer", {"d_model": 128, "num_layers": 2, "ffn_dim": 512}),
}
PRECISIONS = ("float32", "tf32", "bf16-mixed")
ADAM_BYTES_PER_PARAMETER = 28  # read parameter, gradient, two moments; write parameter and two moments (float32)


def matmul_rate(device: torch.device, dtype: torch.dtype, tf32: bool, n: int, repeats: int) -> float:
    """FLOP/s of an n x n x n product of random data (three pairs of operands in turn, so no cache holds them)."""
    timing.set_tf32(tf32)
    pairs = [(torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype))
             for _ in range(3)]
    turn = iter(range(10**9))

    def product():
        a, b = pairs[next(turn) % 3]
        return a @ b

    seconds = timing.median_seconds(product, device, repeats)
    timing.set_tf32(False)
    return 2 * n**3 / seconds


def copy_bandwidth(device: torch.device, nbytes: int, repeats: int) -> float:
    """Bytes/s of a device-to-device copy, counting the bytes read and the bytes written."""
    src = torch.randn(nbytes // 4, device=device)
    dst = torch.empty_like(src)
    seconds = timing.median_seconds(lambda: dst.copy_(src), device, repeats)
    return 2 * nbytes / seconds


def make_model(config: str, overrides: dict, vocab, random_init: bool) -> SentenceModel:
    torch.manual_seed(0)
    enc = OmegaConf.load(ROOT / "conf" / "encoder" / f"{config}.yaml")
    enc.update(overrides)
    if random_init:
        enc.embedding_init = "random"
    obj = OmegaConf.load(ROOT / "conf" / "objective" / "qt.yaml")
    assert isinstance(obj, DictConfig)  # a mapping file
    obj.pop("defaults", None)
    # as plain dicts, which SentenceModel makes of them first thing
    return SentenceModel(encoder=plain(enc), objective=plain(obj), vocab=vocab,
                         optimizer={"_target_": "torch.optim.Adam", "lr": 1e-3})


def rnn_path(path: str) -> contextlib.AbstractContextManager:
    """``default``: the encoders as they are; ``padded``: their ``run_rnn`` calls forced onto the CPU's path."""
    if path == "default":
        return contextlib.nullcontext()
    padded = functools.partial(run_rnn, packed=False)
    stack = contextlib.ExitStack()
    for module in (bilstm, gru):
        stack.enter_context(mock.patch.object(module, "run_rnn", padded))
    return stack


def to_device(batch: dict, device: torch.device) -> dict:
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def timed_steps(model: SentenceModel, batches: list[dict], device: torch.device, precision: str, warmup: int,
                min_batches: int, min_seconds: float) -> list[float]:
    """Seconds of each timed training step (device synchronised around it), after ``warmup`` steps."""
    timing.set_tf32(precision == "tf32")
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    autocast = (torch.autocast(device.type, dtype=torch.bfloat16) if precision == "bf16-mixed"
                else contextlib.nullcontext())
    model.train()
    seconds: list[float] = []
    i = 0
    while len(seconds) < min_batches or sum(seconds) < min_seconds:
        batch = batches[i % len(batches)]
        timing.synchronize(device)
        t0 = time.perf_counter()
        with autocast:
            loss = model.objective(to_device(batch, device))["loss"]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        timing.synchronize(device)
        if i >= warmup:
            seconds.append(time.perf_counter() - t0)
        i += 1
    timing.set_tf32(False)
    if not torch.isfinite(loss):
        raise RuntimeError(f"non-finite loss {loss.item()} in {precision}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=400)
    parser.add_argument("--batches", type=int, default=20, help="timed batches per row (at least)")
    parser.add_argument("--min-seconds", type=float, default=2.0, help="timed seconds per row (at least)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--encoders", default=",".join(ENCODERS), help=f"of {', '.join(ENCODERS)}")
    parser.add_argument("--precisions", default=",".join(PRECISIONS))
    parser.add_argument("--padded-precisions", default="bf16-mixed",
                        help="precisions also timed on the recurrent encoders' padded (CPU) path; empty: none")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    records.add_options(parser, "BiLSTM-max 2 x 16, random word vectors, batches of 8 from a tiny generated corpus, "
                                  "256^3 products and an 8 MB copy")
    args = parser.parse_args(argv)
    run = records.start("gpu_throughput", args, ROOT)
    device = torch.device(args.device)
    if args.smoke:
        args.batch_size, args.batches, args.min_seconds, args.warmup = 8, 2, 0.0, 1
    torch.use_deterministic_algorithms(True, warn_only=True)  # as trainer=gpu (deterministic: warn)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    n, repeats, copy_bytes = (256, 3, 8 << 20) if args.smoke else (8192, 10, 2 << 30)
    rates = {"float32": matmul_rate(device, torch.float32, False, n, repeats),
             "tf32": matmul_rate(device, torch.float32, True, n, repeats),
             "bf16-mixed": matmul_rate(device, torch.bfloat16, False, n, repeats)}
    bandwidth = copy_bandwidth(device, copy_bytes, repeats)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"{name}, torch {torch.__version__}: matrix products {n}^3 float32 {rates['float32'] / 1e12:.1f}, "
          f"tf32 {rates['tf32'] / 1e12:.1f}, bf16 {rates['bf16-mixed'] / 1e12:.1f} TFLOP/s; "
          f"copy {bandwidth / 1e12:.2f} TB/s (read + written)", flush=True)

    with tempfile.TemporaryDirectory(prefix="gpu_throughput_") as tmp:
        books = smoke_inputs.tiny_corpus(Path(tmp) / "corpus") if args.smoke else ROOT / "assets" / "books"
        cache = Path(tmp) / "cache" if args.smoke else ROOT / ".cache" / "corpus"
        vocab, splits, _ = load_corpus(books / "train", books / "valid", CorpusSettings(), cache, default_workers())
    chunks = ContiguousChunks(splits["train"], args.batch_size)
    batches = [chunks[i] for i in range(min(len(chunks), 32))]
    encoders = {"bilstm_max 2x16": ("bilstm_max", {"hidden_dim": 16})} if args.smoke else {
        k: ENCODERS[k] for k in args.encoders.split(",")}
    print("\n| encoder | params | precision | rnn path | sentences/s | GFLOP/step | MB/step | TFLOP/s | floor ms | "
          "of the floor |\n|---|---|---|---|---|---|---|---|---|---|", flush=True)
    padded = [p for p in args.padded_precisions.split(",") if p]
    rows = []
    for label, (config, overrides) in encoders.items():
        cpu_model = make_model(config, overrides, vocab, args.smoke)
        flops = training_step_flops(cpu_model, batches[0])
        trainable = sum(p.numel() for p in cpu_model.parameters() if p.requires_grad)
        nbytes = ADAM_BYTES_PER_PARAMETER * trainable + sum(t.numel() * t.element_size() for t in batches[0].values())
        runs = [(p, "default") for p in args.precisions.split(",")] + [(p, "padded") for p in padded]
        for precision, path in runs:
            model = make_model(config, overrides, vocab, args.smoke).to(device)
            with rnn_path(path):
                seconds = timed_steps(model, batches, device, precision, args.warmup, args.batches, args.min_seconds)
            step = statistics.median(seconds)
            floor = max(flops / rates[precision], nbytes / bandwidth)
            row = {"encoder": label, "config": config, "overrides": overrides, "precision": precision, "rnn_path": path,
                   "parameters": sum(p.numel() for p in model.parameters()), "trainable": trainable,
                   "flops_per_step": flops, "bytes_per_step": nbytes, "timed_batches": len(seconds),
                   "median_step_seconds": step, "sentences_per_second": args.batch_size / step,
                   "achieved_flops_per_second": flops / step, "floor_seconds": floor, "share_of_floor": floor / step,
                   "share_of_matmul_rate": flops / step / rates[precision]}
            rows.append(row)
            print(f"| {label} | {row['parameters'] / 1e6:.1f}M | {precision} | {path} | "
                  f"{row['sentences_per_second']:,.0f} | "
                  f"{flops / 1e9:.1f} | {nbytes / 1e6:.0f} | {flops / step / 1e12:.2f} | {1e3 * floor:.2f} | "
                  f"{100 * floor / step:.1f}% |", flush=True)
            del model
            if device.type == "cuda":
                torch.cuda.empty_cache()
    run.write({"device": name, "matmul_size": n, "matmul_rates": rates, "copy_bandwidth": bandwidth,
               "batch_size": args.batch_size, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
