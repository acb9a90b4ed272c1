"""Which tokens does each tokenizer give the task files and the books, and how many of them does GloVe know?

    SENTENCE_DATA=../shared/data python benchmarks/token_coverage.py [--books 8] [--speed 4000]

For every task family's sentences (all of them) and for the raw text of the first ``--books`` shipped books, per
tokenizer (whitespace as SentEval's reference clients split, Moses, treebank): the share of tokens GloVe 6B knows,
the commonest unknown tokens, and how many sentences are not a fixed point (tokenising the output again changes
it); then microseconds per sentence for each tokenizer on ``--speed`` sentences of each kind, side by side.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sentence_lab.text.documents import list_documents, read_document, split_sentences  # noqa: E402
from sentence_lab.evaluation.tasks.registry import TASKS  # noqa: E402
from sentence_lab.text import Tokenizer  # noqa: E402
from sentence_lab.text.glove import glove_words  # noqa: E402

FAMILIES = ["MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC", "SICKRelatedness", "STS12", "STS13", "STS14",
            "STS15", "STS16", "STSBenchmark"]
KINDS = ("whitespace", "moses", "treebank")


def texts(data_root: Path, books: int) -> dict[str, list[str]]:
    out = {name: sorted(set(TASKS[name].loader(data_root).sentences())) for name in FAMILIES}
    out["books"] = [s for path in list_documents(ROOT / "assets" / "books" / "train")[:books]
                    for s in split_sentences(read_document(path))]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--books", type=int, default=8, help="shipped books whose raw text is read")
    parser.add_argument("--speed", type=int, default=4000, help="sentences per kind for the timing")
    args = parser.parse_args()
    if not os.environ.get("SENTENCE_DATA"):
        sys.exit("SENTENCE_DATA is not set: point it at the shared data folder (export SENTENCE_DATA=../shared/data)")
    corpus = texts(Path(os.environ["SENTENCE_DATA"]), args.books)
    words = frozenset(glove_words())
    tokenizers = {kind: Tokenizer(kind) for kind in KINDS}
    print(f"{'text':<16}{'sentences':>10}  " + "  ".join(f"{k + ' known %':>14}" for k in KINDS)
          + f"  {'not fixed (treebank)':>21}  unknown to GloVe, treebank (moses)")
    totals = {kind: [0, 0] for kind in KINDS}
    for name, sentences in corpus.items():
        shares, unknown = [], {}
        for kind, tokenizer in tokenizers.items():
            tokens = [t for s in sentences for t in tokenizer(s)]
            known = sum(t in words for t in tokens)
            shares.append(100 * known / len(tokens))
            unknown[kind] = Counter(t for t in tokens if t not in words)
            if name != "books":
                totals[kind][0] += known
                totals[kind][1] += len(tokens)
        treebank = tokenizers["treebank"]
        not_fixed = sum(treebank(" ".join(treebank(s))) != treebank(s) for s in sentences)
        top = ", ".join(f"{t} {n}" for t, n in unknown["treebank"].most_common(3))
        top_moses = ", ".join(f"{t} {n}" for t, n in unknown["moses"].most_common(3))
        print(f"{name:<16}{len(sentences):>10}  " + "  ".join(f"{s:>14.2f}" for s in shares)
              + f"  {not_fixed:>21}  {top} ({top_moses})")
    print(f"{'all task files':<16}{'':>10}  " + "  ".join(f"{100 * k / n:>14.2f}" for k, n in totals.values()))

    print(f"\nmicroseconds per sentence (median of 5 passes over {args.speed} sentences, lowercased)")
    for name in ("MR", "STSBenchmark", "books"):
        sample = [s.lower() for s in corpus[name][: args.speed]]
        row = []
        for kind, tokenizer in tokenizers.items():
            runs = []
            for _ in range(5):
                start = time.perf_counter()
                for s in sample:
                    tokenizer(s)
                runs.append(time.perf_counter() - start)
            row.append(f"{kind} {1e6 * statistics.median(runs) / len(sample):.0f}")
        print(f"  {name:<14}" + "  ".join(row))


if __name__ == "__main__":
    main()
