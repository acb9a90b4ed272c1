"""A made-up data root in SentEval's layout (every task family, a few dozen examples each) and a toy text
encoder: the fixtures of the evaluation, training-callback and SentEval-API tests."""
from __future__ import annotations

import random
import zlib
from pathlib import Path

import numpy as np

from sentence_lab.evaluation.tasks.probing import PROBING_FILES
from sentence_lab.evaluation.tasks.sts import STS_DATASETS

FILLER = "the a movie film story plot actor scene music time people day way man world life work".split()
POS, NEG = "good great fine nice happy".split(), "bad awful poor sad ugly".split()


def _sentence(rng: random.Random, cue: list[str], n: int | None = None) -> str:
    words = rng.sample(FILLER, n or rng.randint(2, 7)) + [rng.choice(cue)]
    rng.shuffle(words)
    return " ".join(words)


def write_lines(path: Path, lines: list[str], encoding: str = "utf-8") -> None:
    """``lines`` as a text file, one a line, in ``encoding`` (SentEval's MR/CR files are latin-1)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(("\n".join(lines) + "\n").encode(encoding))


def make_senteval_tree(root: Path, n: int = 40, seed: int = 0, xprobe: bool = True) -> Path:
    """Every task in SentEval's layout (probing in X-Probe's, TopConstituents left out). Returns root."""
    rng = random.Random(seed)
    se = root / "senteval"
    for folder, pos_name, neg_name in [("MR", "rt-polarity.pos", "rt-polarity.neg"),
                                       ("CR", "custrev.pos", "custrev.neg"),
                                       ("SUBJ", "subj.objective", "subj.subjective"), ("MPQA", "mpqa.pos", "mpqa.neg")]:
        write_lines(se / folder / pos_name, [_sentence(rng, POS) for _ in range(n)], "latin-1")
        write_lines(se / folder / neg_name, [_sentence(rng, NEG) for _ in range(n)], "latin-1")
    for split, size in [("train", n), ("dev", n // 2), ("test", n // 2)]:
        lines2, lines5 = [], []
        for i in range(size):
            y = i % 2
            lines2.append(f"{_sentence(rng, POS if y else NEG)} \t{y}")
            y5 = i % 5
            lines5.append(f"{y5} {_sentence(rng, [POS, NEG, FILLER, POS[:2], NEG[:2]][y5])}")
        write_lines(se / "SST" / "binary" / f"sentiment-{split}", lines2)
        write_lines(se / "SST" / "fine" / f"sentiment-{split}", lines5)
    coarse = ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
    cues = [["abbreviation"], ["why"], ["what"], ["who"], ["where"], ["many"]]
    for name, size in [("train_5500.label", 2 * n), ("TREC_10.label", n // 2)]:
        write_lines(se / "TREC" / name, [f"{coarse[i % 6]}:x {_sentence(rng, cues[i % 6])} ?" for i in range(size)],
                    "latin-1")
    for name, size in [("msr_paraphrase_train.txt", n), ("msr_paraphrase_test.txt", n // 2)]:
        lines = ["\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
        for i in range(size):
            a = _sentence(rng, POS)
            b = a if i % 2 else _sentence(rng, NEG)
            lines.append(f"{i % 2}\t{i}\t{i + 1000}\t{a}\t{b}")
        write_lines(se / "MRPC" / name, lines)
    judgments = ["CONTRADICTION", "NEUTRAL", "ENTAILMENT"]
    for name, size in [("SICK_train.txt", n), ("SICK_trial.txt", n // 2), ("SICK_test_annotated.txt", n // 2)]:
        lines = ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"]
        for i in range(size):
            a = _sentence(rng, POS)
            b = a if i % 3 == 2 else _sentence(rng, NEG if i % 3 == 0 else FILLER)
            lines.append(f"{i}\t{a}\t{b}\t{1 + 2 * (i % 3) + rng.random() * 0.9:.1f}\t{judgments[i % 3]}")
        write_lines(se / "SICK" / name, lines)
    snli_labels = ["entailment", "neutral", "contradiction"]
    for split, size in [("train", n), ("dev", n // 2), ("test", n // 2)]:
        s1 = [_sentence(rng, POS) for _ in range(size)]
        s2 = [s1[i] if i % 3 == 0 else _sentence(rng, FILLER if i % 3 == 1 else NEG) for i in range(size)]
        write_lines(se / "SNLI" / f"s1.{split}", s1)
        write_lines(se / "SNLI" / f"s2.{split}", s2)
        write_lines(se / "SNLI" / f"labels.{split}", [snli_labels[i % 3] for i in range(size)])
    for year, names in STS_DATASETS.items():
        for name in names:
            inputs, gold = [], []
            for i in range(8):
                a = _sentence(rng, POS)
                b = a if i % 2 else _sentence(rng, NEG)
                inputs.append(f"{a}\t{b}")
                gold.append("" if i == 7 and year == "STS15" else f"{(5.0 if i % 2 else 1.0) - rng.random():.2f}")
            write_lines(se / "STS" / f"{year}-en-test" / f"STS.input.{name}.txt", inputs)
            write_lines(se / "STS" / f"{year}-en-test" / f"STS.gs.{name}.txt", gold)
    for split, size in [("train", n), ("dev", n // 2), ("test", n // 2)]:
        lines = []
        for i in range(size):
            a = _sentence(rng, POS)
            b = a if i % 2 else _sentence(rng, NEG)
            lines.append(f"main-captions\tMSRvid\t2012test\t{i:04d}\t"
                         f"{(4.5 if i % 2 else 1.0) + rng.random() * 0.5:.3f}\t{a}\t{b}")
        write_lines(se / "STS" / "STSBenchmark" / f"sts-{split}.csv", lines)
    if xprobe:
        for task, folder in PROBING_FILES.items():
            if task == "TopConstituents":
                continue
            for split, size in [("va", 2 * n), ("te", n)]:
                lines = [f"{_sentence(rng, [POS, NEG][i % 2])}\t{['O', 'I'][i % 2]}" for i in range(size)]
                write_lines(root / "probing" / "xprobe-en" / folder / f"{split}.txt", lines)
    return root


class HashEncoder:
    """Deterministic toy text encoder: mean of per-word pseudo-random vectors; counts what it encodes."""

    def __init__(self, dim: int = 16) -> None:
        self.dim = dim
        self.calls: list[int] = []
        self.seen: list[str] = []

    def _word(self, w: str) -> np.ndarray:
        return np.random.default_rng(zlib.crc32(w.encode())).standard_normal(self.dim).astype(np.float32)

    def encode(self, sentences: list[str]) -> np.ndarray:
        self.calls.append(len(sentences))
        self.seen.extend(sentences)
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)
        for i, s in enumerate(sentences):
            words = s.lower().split()
            if words:
                out[i] = np.mean([self._word(w) for w in words], axis=0)
        return out

    def describe(self) -> dict:
        return {"name": "hash", "dim": self.dim}


