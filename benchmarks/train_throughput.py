"""Quick-Thoughts training throughput per encoder on this machine.

    python benchmarks/train_throughput.py --threads 1      # the figures of docs/results.md (1 thread: a shared machine)
    python benchmarks/train_throughput.py [--batches 20] [--batch-size 100] [--encoders bow,gru,...] [--output PATH]
    python benchmarks/train_throughput.py --encoders bilstm_max --corpus ../shared/data/corpora/gutenberg --compile
    python benchmarks/train_throughput.py --batch-size 400 --encoders bilstm_max:hidden_dim=128,transformer
    python benchmarks/train_throughput.py --smoke          # bow on a tiny generated corpus, in seconds

For every encoder config it prints: sentences/s through Lightning, sentences/s of the same model on the same batches
in a bare PyTorch loop (Adam, clipping), Lightning's overhead in %, the FLOPs of one training step (torch's
FlopCounterMode) and the achieved FLOP/s as a fraction of this CPU's float32 matmul peak, measured in the same run,
and the peak resident memory of the bare loop (Linux's VmHWM, reset before it). An encoder is a config name, with
settings after a colon joined by ``+`` (``bilstm_max:hidden_dim=128`` is BiLSTM-max at 256 dimensions,
``transformer``'s ``d_model``). Batches are read from the prepared, memory-mapped corpus (``--corpus``: a folder with
``train/`` and ``valid/``; default the shipped books), as training reads them. ``--compile`` adds a row per encoder
with ``SentenceModel.compile_encoders`` (``model.compile=true``), timed after its compilation, whose seconds are
printed apart. The figures and the machine go to a JSON record (``--output``, default
``logs/benchmarks/train_throughput/<time>.json``).
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import lightning as L
import torch
from omegaconf import DictConfig, OmegaConf
from torch.utils.data import DataLoader, Subset

from lib import records, smoke_inputs
from lib.flops import training_step_flops
from sentence_lab.datamodules.contiguous import ContiguousChunks
from sentence_lab.datamodules.corpus import CorpusSettings, load_corpus
from sentence_lab.text.config_values import plain
from sentence_lab.training.module import SentenceModel

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PROJECT_ROOT", str(ROOT))

ENCODERS = ("bow", "gru", "bigru", "bilstm_max", "bilstm_last", "gatedconv")


def matmul_peak(n: int = 2048, repeats: int = 10) -> float:
    """Best float32 FLOP/s of an n x n matmul on this device."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best


def encoder_config(spec: str) -> DictConfig:
    """``name`` or ``name:key=value+key=value``: ``conf/encoder/<name>.yaml`` with those settings."""
    name, _, settings = spec.partition(":")
    enc = OmegaConf.load(ROOT / "conf" / "encoder" / f"{name}.yaml")
    assert isinstance(enc, DictConfig)
    merged = OmegaConf.merge(enc, OmegaConf.from_dotlist([s for s in settings.split("+") if s]))
    assert isinstance(merged, DictConfig)
    return merged


def peak_resident_reset() -> bool:
    """Reset this process's peak resident memory (Linux: ``5`` into ``/proc/self/clear_refs``); False elsewhere."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_resident_mb() -> float | None:
    """This process's peak resident memory since its reset (``VmHWM``), in MiB; None where unknown."""
    try:
        line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM"))
    except (OSError, StopIteration):
        return None
    return int(line.split()[1]) / 1024


def make_model(encoder: str, vocab, random_init: bool = False, compiled: bool = False) -> SentenceModel:
    torch.manual_seed(0)
    enc = encoder_config(encoder)
    if random_init:  # the smoke run: no GloVe table to load
        enc.embedding_init = "random"
    obj = OmegaConf.load(ROOT / "conf" / "objective" / "qt.yaml")
    assert isinstance(obj, DictConfig)  # a mapping file
    obj.pop("defaults", None)  # the objective's default encoder and data: not constructor arguments
    # as plain dicts, which SentenceModel makes of them first thing
    model = SentenceModel(encoder=plain(enc), objective=plain(obj), vocab=vocab,
                          optimizer={"_target_": "torch.optim.Adam", "lr": 5e-4})
    if compiled:
        torch._dynamo.reset()
        model.compile_encoders()
    return model


def compilation_seconds(model: SentenceModel, batch: dict) -> float:
    """The first training step of a compiled model, which compiles it."""
    start = time.perf_counter()
    model.objective(batch)["loss"].backward()
    model.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def bare_loop(model: SentenceModel, loader: DataLoader, warmup: int) -> float:
    """Seconds for the timed batches of the same training steps (same loader), no Lightning."""
    opt = model.configure_optimizers()
    model.train()
    for i, batch in enumerate(loader):
        if i == warmup:
            start = time.perf_counter()
        loss = model.objective(batch)["loss"]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
    return time.perf_counter() - start


class Timer(L.Callback):
    def __init__(self, warmup: int) -> None:
        self.warmup = warmup
        self.start: float | None = None
        self.end: float | None = None

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if batch_idx == self.warmup:
            self.start = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.end = time.perf_counter()


def lightning_loop(model: SentenceModel, loader: DataLoader, n: int, warmup: int) -> float:
    """The same batches, in the same order, through ``Trainer.fit``."""
    timer = Timer(warmup)
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=n, limit_val_batches=0, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        gradient_clip_val=5.0, deterministic=True, callbacks=[timer])
    trainer.fit(model, train_dataloaders=loader)
    assert timer.start is not None and timer.end is not None, f"fewer than {warmup + 1} batches ran"
    return timer.end - timer.start


def time_encoder(name: str, compiled: bool, vocab, loader: DataLoader, first: dict, flops: int, timed: int,
                 peak: float, args: argparse.Namespace) -> dict:
    """One encoder's row: the bare loop and Lightning on the same batches (``first`` is the first of them)."""
    n = args.warmup + timed
    sentences = timed * args.batch_size
    bare_model = make_model(name, vocab, args.smoke, compiled)
    compiling = compilation_seconds(bare_model, first) if compiled else 0.0
    reset = peak_resident_reset()
    bare = bare_loop(bare_model, loader, args.warmup)
    peak_mb = peak_resident_mb() if reset else None
    del bare_model
    model = make_model(name, vocab, args.smoke, compiled)
    params = sum(p.numel() for p in model.parameters())
    light = lightning_loop(model, loader, n, args.warmup)
    achieved = flops * timed / bare
    label = f"{name} (compiled)" if compiled else name
    print(f"{label:<20} {params / 1e6:>7.2f}M {sentences / light:>14.1f} {sentences / bare:>10.1f} "
          f"{100 * (light - bare) / bare:>8.1f}% {flops / 1e9:>11.2f} {achieved / 1e9:>8.1f} "
          f"{100 * achieved / peak:>7.1f}% {peak_mb or float('nan'):>9.0f}" +
          (f"   compiled in {compiling:.1f} s" if compiled else ""))
    return {"encoder": name, "compiled": compiled, "output_dim": model.output_dim, "peak_resident_mib": peak_mb,
            "compilation_seconds": compiling, "parameters": params,
            "timed_batches": timed, "sentences": sentences,
            "lightning_sentences_per_second": sentences / light, "bare_sentences_per_second": sentences / bare,
            "lightning_overhead": (light - bare) / bare, "flops_per_step": flops,
            "achieved_flops_per_second": achieved, "share_of_peak": achieved / peak}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=20, help="timed batches per encoder (at least)")
    parser.add_argument("--min-seconds", type=float, default=3.0,
                        help="fast encoders get more timed batches, so each loop runs at least this long")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--encoders", default=",".join(ENCODERS))
    parser.add_argument("--corpus", type=Path, default=ROOT / "assets" / "books",
                        help="a corpus folder with train/ and valid/ (prepared once into .cache/corpus)")
    parser.add_argument("--compile", action="store_true", help="also time each encoder compiled (model.compile)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: torch's choice); use 1 when another job holds a core, "
                             "since OpenMP threads waiting on a busy core make every op slow")
    records.add_options(parser, "the bow encoder, randomly initialised, 3 batches of 8 from a tiny generated "
                                  "corpus, a 256^3 matmul for the peak")
    args = parser.parse_args(argv)
    run = records.start("train_throughput", args, ROOT)
    if args.smoke:
        args.encoders, args.batches, args.warmup, args.batch_size, args.min_seconds = "bow", 3, 1, 8, 0.0
    if args.threads:
        torch.set_num_threads(args.threads)
    # Both loops run as the default trainer config does (deterministic=True sets this for Lightning).
    torch.use_deterministic_algorithms(True)

    with tempfile.TemporaryDirectory(prefix="train_throughput_") as tmp:
        books = smoke_inputs.tiny_corpus(Path(tmp) / "corpus") if args.smoke else args.corpus
        cache = Path(tmp) / "cache" if args.smoke else ROOT / ".cache" / "corpus"
        vocab, splits, _ = load_corpus(books / "train", books / "valid", CorpusSettings(), cache)
    chunks = ContiguousChunks(splits["train"], args.batch_size)
    peak = matmul_peak(256, 2) if args.smoke else matmul_peak()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; float32 matmul peak "
          f"{peak / 1e9:.1f} GFLOP/s; QT batches of {args.batch_size} consecutive "
          f"{'generated' if args.smoke else 'book'} sentences of {len(splits['train']):,} "
          f"({'memory-mapped' if splits['train'].source else 'in memory'}), "
          f"at least {args.batches} timed (and {args.min_seconds:.0f} s) after {args.warmup} warm-up")
    print(f"{'encoder':<20} {'params':>8} {'Lightning s/s':>14} {'bare s/s':>10} {'overhead':>9} "
          f"{'GFLOP/step':>11} {'GFLOP/s':>8} {'of peak':>8} {'peak MiB':>9}")
    rows = []
    for name in args.encoders.split(","):
        # One uncompiled step gives the FLOPs and sizes the timed loops of both rows.
        start = time.perf_counter()
        flops = training_step_flops(make_model(name, vocab, args.smoke), chunks[0])
        timed = max(args.batches, int(args.min_seconds / max(time.perf_counter() - start, 1e-4)))
        loader = DataLoader(Subset(chunks, [i % len(chunks) for i in range(args.warmup + timed)]), batch_size=None,
                            shuffle=False)
        for compiled in (False, True) if args.compile else (False,):
            rows.append(time_encoder(name, compiled, vocab, loader, chunks[0], flops, timed, peak, args))
    run.write({"corpus": str(books), "train_sentences": len(splits["train"]), "matmul_peak_flops": peak,
               "threads": torch.get_num_threads(), "batch_size": args.batch_size, "warmup": args.warmup,
               "encoders": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
