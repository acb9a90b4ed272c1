"""Training speed of each objective with the same encoder on the same corpus slice.

    python benchmarks/objective_speed.py [--encoder gru] [--objectives qt,skipthought,autoencoder]
                                         [--batches 20] [--batch-size 128] [--recipe] [--output PATH]
    python benchmarks/objective_speed.py --smoke      # qt and skipthought, small GRU, tiny generated corpus

Logeswaran & Lee (2018, appendix C) measured Quick-Thoughts 4.8x faster to train than skip-thought on the
same GRU encoder. This script times a bare training loop (forward, backward, Adam step, gradient clipping)
over the first ``--batches`` batches of the shipped books for each objective (same sentences, same batch
size, same encoder) and prints seconds per 10k sentences and the ratio to the first objective; the figures go to a
JSON record (``--output``, default ``logs/benchmarks/objective_speed/<time>.json``).
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from lib import records, smoke_inputs
from sentence_lab.training.module import SentenceModel

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PROJECT_ROOT", str(ROOT))


def composed(objective: str, encoder: str, batch_size: int, recipe: bool = False, more: tuple[str, ...] = ()):
    """The objective's own config (its paper's sizes), or with ``recipe`` its CPU recipe (experiment/<name>.yaml);
    ``more``: further overrides (the smoke run's corpus and sizes)."""
    extra = [] if recipe else ["~experiment"]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[f"objective={objective}", f"encoder={encoder}",
                                          f"data.batch_size={batch_size}", "paths.output_dir=/tmp", *extra, *more])
    return cfg


def seconds_per_10k(cfg, batches: list[dict], datamodule) -> tuple[float, int]:
    torch.manual_seed(0)
    model = SentenceModel(encoder=cfg.encoder, objective=cfg.objective, vocabs=datamodule.vocabs,
                          tokenizers={s: t.to_dict() for s, t in datamodule.tokenizers.items()})
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=5e-4)

    def step(batch: dict) -> None:
        optimizer.zero_grad(set_to_none=True)
        model.objective(batch)["loss"].backward()
        torch.nn.utils.clip_grad_norm_(params, 5.0)
        optimizer.step()

    step(batches[0])  # warm-up (allocations, oneDNN kernels)
    sentences = sum(int(b["lengths"].shape[0]) for b in batches)
    start = time.perf_counter()
    for batch in batches:
        step(batch)
    return (time.perf_counter() - start) / sentences * 10_000, sum(p.numel() for p in params)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", default="gru")
    parser.add_argument("--objectives", default="qt,skipthought")
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--recipe", action="store_true",
                        help="with each objective's CPU recipe (conf/experiment/<name>.yaml), not its own config")
    records.add_options(parser, "qt and skipthought on a 32-unit GRU (random embeddings), 3 batches of 8 from "
                                  "a tiny generated corpus")
    args = parser.parse_args(argv)
    run = records.start("objective_speed", args, ROOT)
    with tempfile.TemporaryDirectory(prefix="objective_speed_") as tmp:
        more: tuple[str, ...] = ()
        if args.smoke:
            args.objectives, args.batches, args.batch_size = "qt,skipthought", 3, 8
            corpus = smoke_inputs.tiny_corpus(Path(tmp) / "corpus")
            more = (f"data.train_dir={corpus / 'train'}", f"data.valid_dir={corpus / 'valid'}",
                    f"paths.cache_dir={Path(tmp) / 'cache'}", "data.preprocess_workers=0",
                    "encoder.embedding_init=random", "encoder.hidden_dim=32")
        return measure(args, run, more)


def measure(args: argparse.Namespace, run: records.Run, more: tuple[str, ...]) -> int:
    objectives = args.objectives.split(",")
    base = composed(objectives[0], args.encoder, args.batch_size, args.recipe, more)
    datamodule = instantiate(base.data)
    datamodule.setup("fit")
    loader = iter(datamodule.train_dataloader())
    batches = [next(loader) for _ in range(args.batches)]
    n = sum(int(b["lengths"].shape[0]) for b in batches)
    print(f"encoder={args.encoder}, {n} sentences in {args.batches} batches of {args.batch_size} "
          f"({'a tiny generated corpus' if args.smoke else 'the shipped books'}), {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}, {'CPU recipes' if args.recipe else 'objective configs'}")
    print(f"| objective | s / 10k sentences | trainable parameters | slower than {objectives[0]} |")
    print("|---|---|---|---|")
    first, rows = None, []
    for name in objectives:
        cfg = composed(name, args.encoder, args.batch_size, args.recipe, more)
        if OmegaConf.select(cfg, "data._target_") != base.data._target_:
            raise SystemExit(f"objective={name} does not train on ordered sentences: compare it elsewhere")
        seconds, n_params = seconds_per_10k(cfg, batches, datamodule)
        first = first or seconds
        rows.append({"objective": name, "seconds_per_10k_sentences": seconds, "trainable_parameters": n_params,
                     "ratio_to_first": seconds / first})
        print(f"| {name} | {seconds:.1f} | {n_params / 1e6:.2f}M | {seconds / first:.2f}x |", flush=True)
    run.write({"encoder": args.encoder, "recipe": args.recipe, "batches": args.batches, "batch_size": args.batch_size,
               "sentences": n, "threads": torch.get_num_threads(), "objectives": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
