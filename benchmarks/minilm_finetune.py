"""Fine-tune all-MiniLM-L6-v2 with Quick-Thoughts for one epoch (``experiment=qt_minilm``), the evaluation suite after
the epoch: the device check of ``encoder=pretrained``.

    python benchmarks/minilm_finetune.py --gpu                  # trainer=gpu (bf16-mixed), the recipe's 8,000 sentences
    python benchmarks/minilm_finetune.py --sentences 800        # here, on the CPU in float32
    python benchmarks/minilm_finetune.py --smoke                # 2 steps of 4 sentences, the shipped probing Length

Run from the repository root; the suite reads ``SENTENCE_DATA`` (``--tasks``; the shipped probing set without it).
Printed and written to a JSON record (``--output``, default ``logs/benchmarks/minilm_finetune/<time>.json``): the
training's input tokens per second (the model's tokens, [CLS] and [SEP] included, over the epoch's training seconds,
validation and suite left out), sentences per second, peak memory (the GPU's ``max_memory_allocated``; on the CPU the
process's peak resident set), the suite's scores before training and after the epoch, and its seconds. Needs the
sentence-transformers extra (pip install -r requirements-sentence-transformers.txt).
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from lightning import Callback
from omegaconf import DictConfig, open_dict

from lib import records
from sentence_lab.runs.run import fit

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PROJECT_ROOT", str(ROOT))
TASKS = "[STSBenchmark,SICKRelatedness,TREC,Length]"


class EpochClock(Callback):
    """The training epoch's seconds (device synchronised) and the model's input tokens it read."""

    def __init__(self) -> None:
        self.seconds, self.tokens, self.sentences, self._start = 0.0, 0, 0, 0.0

    @staticmethod
    def _sync() -> None:
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self._sync()
        self._start = time.perf_counter()
        encoder = pl_module.objective.f
        kept = batch["lengths"].clamp(max=encoder.max_words)
        self.tokens += int(kept.sum()) + len(kept) * (encoder.prefix.numel() + encoder.suffix.numel())
        self.sentences += len(kept)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._sync()
        self.seconds += time.perf_counter() - self._start


def clocked_config(overrides: list[str], out: str) -> DictConfig:
    """train.py's config of ``overrides``, writing to ``out``, with an ``EpochClock`` among its callbacks."""
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=overrides, return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    with open_dict(cfg):
        cfg.paths.output_dir = out
        cfg.callbacks.epoch_clock = {"_target_": "minilm_finetune.EpochClock"}
        del cfg.hydra
    return cfg


def peak_memory_mib() -> float | None:
    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**20
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    line = next((line for line in status.splitlines() if line.startswith("VmHWM:")), None)
    return int(line.split()[1]) / 1024 if line else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", action="store_true", help="trainer=gpu: the GPU in bf16-mixed")
    parser.add_argument("--sentences", type=int, default=None, help="training sentences (default: the recipe's)")
    parser.add_argument("--batch-size", type=int, default=None, help="default: the recipe's (64)")
    parser.add_argument("--tasks", default=TASKS, help="the suite's tasks after the epoch (and before it)")
    parser.add_argument("--suite-examples", type=int, default=None,
                        help="cap each task split at this many examples (a quick look, not SentEval's protocol)")
    records.add_options(parser, "2 steps of 4 sentences, the suite on the shipped probing Length")
    args = parser.parse_args()
    run = records.start("minilm_finetune", args, ROOT)
    overrides = ["experiment=qt_minilm", "logger=none", "test_after_fit=false", "~callbacks.rich_progress_bar",
                 f"callbacks.eval_suite.tasks={'[Length]' if args.smoke else args.tasks}"]
    overrides += ["trainer=gpu"] if args.gpu else []
    if args.smoke:
        overrides += ["data.max_train_sentences=8", "data.batch_size=4", "callbacks.eval_suite.probing=generated",
                      "callbacks.eval_suite.max_examples_per_split=40",
                      "callbacks.eval_suite.params.max_epoch=2", "trainer.limit_val_batches=1"]
    overrides += [f"data.max_train_sentences={args.sentences}"] if args.sentences else []
    overrides += [f"data.batch_size={args.batch_size}"] if args.batch_size else []
    overrides += [f"callbacks.eval_suite.max_examples_per_split={args.suite_examples}"] if args.suite_examples else []
    with tempfile.TemporaryDirectory() as out:
        cfg = clocked_config(overrides, out)
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        started = time.perf_counter()
        trainer, model = fit(cfg)
        wall = time.perf_counter() - started
        clock = next(c for c in trainer.callbacks if type(c).__name__ == "EpochClock")  # type: ignore[attr-defined]
        suite = {int(p.stem.split("_")[1]): json.loads(p.read_text()) for p in sorted((Path(out) / "eval").glob(
            "epoch_*.json"))}
    scores = {epoch: {task: r.get("main_score") for task, r in doc["results"].items()} for epoch, doc in suite.items()}
    record = {"device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
              "precision": str(cfg.trainer.get("precision")), "steps": int(trainer.global_step),
              "sentences": clock.sentences, "tokens": clock.tokens, "train_seconds": round(clock.seconds, 2),
              "tokens_per_s": round(clock.tokens / max(clock.seconds, 1e-9), 1),
              "sentences_per_s": round(clock.sentences / max(clock.seconds, 1e-9), 1),
              "peak_memory_mib": peak_memory_mib(), "wall_seconds": round(wall, 1), "scores": scores,
              "suite_seconds": {epoch: doc.get("eval_seconds") for epoch, doc in suite.items()}}
    print(f"{record['device']} {record['precision']}: {record['steps']} steps, {clock.sentences} sentences, "
          f"{clock.tokens} tokens in {clock.seconds:.1f} s of training: {record['tokens_per_s']:,.0f} tokens/s, "
          f"{record['sentences_per_s']:,.1f} sentences/s; peak memory {record['peak_memory_mib'] or 0:,.0f} MiB")
    for epoch, row in scores.items():
        print(f"suite, epoch {epoch} ({record['suite_seconds'][epoch]} s): "
              + ", ".join(f"{task} {score}" for task, score in row.items()))
    run.write(record, libraries=("transformers", "tokenizers", "sentence-transformers"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
