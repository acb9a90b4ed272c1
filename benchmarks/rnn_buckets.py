"""Length buckets in ``encoders.rnn.run_rnn``: one training step's encoder work, whole padded batch vs buckets.

On batches of the default run (400 contiguous sentences of the shipped books, English Penn-Treebank tokens), it
times the forward and backward pass of the default encoder (BiLSTM-max, 2 x 256 over frozen GloVe-sized 50-d
inputs) with ``bucket_rows`` None (the whole batch padded to its longest sentence) and with buckets, interleaved
batch by batch, and prints the median seconds per batch, the ratio to the whole batch, and the largest difference
of the pooled vectors from the whole batch's.

    python benchmarks/rnn_buckets.py [--batches 12] [--threads 2] [--buckets 32,64,128]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sentence_lab.datamodules.contiguous import ContiguousChunks  # noqa: E402
from sentence_lab.datamodules.corpus import CorpusSettings, load_corpus  # noqa: E402
from sentence_lab.encoders.base import length_mask  # noqa: E402
from sentence_lab.encoders.rnn import run_rnn  # noqa: E402


def step(lstm: torch.nn.LSTM, x: torch.Tensor, lengths: torch.Tensor, bucket_rows: int | None) -> tuple[float, torch.Tensor]:
    """Seconds of one forward + backward pass, and the max-pooled vectors."""
    lstm.zero_grad()
    start = time.perf_counter()
    states, _ = run_rnn(lstm, x, lengths, bucket_rows=bucket_rows)
    pooled = states.masked_fill(~length_mask(lengths, x.size(1)).unsqueeze(-1), float("-inf")).max(1).values
    pooled.sum().backward()
    return time.perf_counter() - start, pooled.detach()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=400)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--buckets", default="32,64,128")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    _, splits, _ = load_corpus(ROOT / "assets/books/train", ROOT / "assets/books/valid", CorpusSettings(),
                               ROOT / ".cache/corpus", workers=args.threads)
    chunks = ContiguousChunks(splits["train"], args.batch_size)
    picks = [chunks[i] for i in range(0, len(chunks), max(1, len(chunks) // args.batches))][: args.batches]
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(50, 256, bidirectional=True, batch_first=True)
    settings: list[int | None] = [None, *(int(b) for b in args.buckets.split(","))]
    times: dict[int | None, list[float]] = {b: [] for b in settings}
    worst: dict[int | None, float] = {b: 0.0 for b in settings}
    lengths_all = torch.cat([b["lengths"] for b in picks]).float()
    for batch in picks:
        lengths = batch["lengths"]
        x = torch.randn(len(lengths), int(lengths.max()), 50)
        _, reference = step(lstm, x, lengths, None)
        for bucket_rows in settings:
            seconds, pooled = step(lstm, x, lengths, bucket_rows)
            times[bucket_rows].append(seconds)
            worst[bucket_rows] = max(worst[bucket_rows], float((pooled - reference).abs().max()))
    print(f"{len(picks)} batches of {args.batch_size} sentences, {args.threads} threads; tokens per sentence: "
          f"mean {lengths_all.mean():.1f}, longest per batch median "
          f"{statistics.median(int(b['lengths'].max()) for b in picks)}")
    base = statistics.median(times[None])
    print("| bucket_rows | median s/batch (fwd+bwd) | ratio to whole batch | max |pooled - whole| |")
    print("|---|---|---|---|")
    for bucket_rows in settings:
        med = statistics.median(times[bucket_rows])
        print(f"| {bucket_rows or 'whole batch'} | {med:.3f} | {base / med:.2f}x | {worst[bucket_rows]:.1e} |")


if __name__ == "__main__":
    main()
