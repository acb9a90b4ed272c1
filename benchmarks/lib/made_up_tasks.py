"""Task files in SentEval's formats, written from given rows: how the smoke runs (:mod:`lib.smoke_inputs`) and
the tests make a data folder of a few dozen made-up examples. Each writer is the inverse of its task's loader here
(file names, encodings, columns), so a made-up tree loads as SentEval's own; the sentences are the caller's."""
from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from sentence_lab.tasks.binary import BINARY_FILES
from sentence_lab.tasks.mrpc import MRPC_FILES
from sentence_lab.tasks.sick import SICK_FILES
from sentence_lab.tasks.trec import TREC_FILES

__all__ = ["BINARY_FILES", "write_binary", "write_lines", "write_mrpc", "write_senteval_probing", "sick_rows",
           "write_sick", "write_snli", "write_sst", "write_sts", "write_stsb", "write_trec", "write_xprobe"]
MRPC_HEADER = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String"
SICK_HEADER = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"


def write_lines(path: Path, lines: Iterable[str], encoding: str = "utf-8") -> None:
    """``lines`` as a text file, one a line, in ``encoding`` (SentEval's MR, CR, SUBJ, MPQA and TREC are latin-1)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(("\n".join(lines) + "\n").encode(encoding))


def write_binary(folder: Path, task: str, positive: Sequence[str], negative: Sequence[str]) -> None:
    """MR, CR, SUBJ or MPQA: one sentence a line, a file per class."""
    pos_name, neg_name = BINARY_FILES[task]
    write_lines(folder / task / pos_name, positive, "latin-1")
    write_lines(folder / task / neg_name, negative, "latin-1")


def write_sst(folder: Path, kind: str, split: str, rows: Iterable[tuple[int, str]]) -> None:
    """SST ``binary`` (``sentence \\tlabel``) or ``fine`` (``label sentence``), one file per split."""
    lines = [f"{s} \t{y}" if kind == "binary" else f"{y} {s}" for y, s in rows]
    write_lines(folder / "SST" / kind / f"sentiment-{split}", lines)


def write_trec(folder: Path, split: str, rows: Iterable[tuple[str, str]]) -> None:
    """TREC: ``COARSE:fine words ?`` a line, ``split`` ``train`` or ``test``."""
    write_lines(folder / "TREC" / TREC_FILES[split], [f"{label}:x {s} ?" for label, s in rows], "latin-1")


def write_mrpc(folder: Path, split: str, rows: Iterable[tuple[int, str, str]]) -> None:
    """MRPC: the header, then ``label id id a b`` (ids made from the row number)."""
    lines = [MRPC_HEADER] + [f"{y}\t{i}\t{i + 1000}\t{a}\t{b}" for i, (y, a, b) in enumerate(rows)]
    write_lines(folder / "MRPC" / MRPC_FILES[split], lines)


def write_sick(folder: Path, split: str, rows: Iterable[tuple[str, str, float, str]]) -> None:
    """SICK: the header, then ``id a b relatedness judgment`` (relatedness to one decimal)."""
    lines = [SICK_HEADER] + [f"{i}\t{a}\t{b}\t{score:.1f}\t{judgment}"
                             for i, (a, b, score, judgment) in enumerate(rows)]
    write_lines(folder / "SICK" / SICK_FILES[split], lines)


def sick_rows(rng: random.Random, size: int, positive: Callable[[], str], negative: Callable[[], str],
              other: Callable[[], str]) -> list[tuple[str, str, float, str]]:
    """``size`` SICK rows whose labels follow the sentences: every third pair is one sentence twice (entailment,
    relatedness about 5), the others a positive sentence against a negative one (contradiction, about 1) or another
    one (neutral, about 3); the sentences are drawn from the caller's makers, in that order, then the score's noise."""
    judgments = ["CONTRADICTION", "NEUTRAL", "ENTAILMENT"]
    rows = []
    for i in range(size):
        a = positive()
        b = a if i % 3 == 2 else (negative() if i % 3 == 0 else other())
        rows.append((a, b, 1 + 2 * (i % 3) + rng.random() * 0.9, judgments[i % 3]))
    return rows


def write_snli(folder: Path, split: str, s1: Sequence[str], s2: Sequence[str], labels: Sequence[str]) -> None:
    """SNLI in InferSent's layout: ``s1.<split>``, ``s2.<split>``, ``labels.<split>``."""
    write_lines(folder / "SNLI" / f"s1.{split}", s1)
    write_lines(folder / "SNLI" / f"s2.{split}", s2)
    write_lines(folder / "SNLI" / f"labels.{split}", labels)


def write_sts(folder: Path, year: str, name: str, pairs: Iterable[tuple[str, str]], gold: Iterable[str]) -> None:
    """One STS12-16 dataset: ``a<TAB>b`` a line and its gold scores as written (an empty line: no score)."""
    root = folder / "STS" / f"{year}-en-test"
    write_lines(root / f"STS.input.{name}.txt", [f"{a}\t{b}" for a, b in pairs])
    write_lines(root / f"STS.gs.{name}.txt", gold)


def write_stsb(folder: Path, split: str, rows: Iterable[tuple[float, str, str]]) -> None:
    """STS Benchmark: ``genre file year id score a b`` (score to three decimals)."""
    lines = [f"main-captions\tMSRvid\t2012test\t{i:04d}\t{score:.3f}\t{a}\t{b}" for i, (score, a, b) in enumerate(rows)]
    write_lines(folder / "STS" / "STSBenchmark" / f"sts-{split}.csv", lines)


def write_xprobe(folder: Path, split: str, rows: Iterable[tuple[str, str]]) -> None:
    """One X-Probe task's ``va`` or ``te`` file: ``sentence<TAB>label``."""
    write_lines(folder / f"{split}.txt", [f"{s}\t{label}" for s, label in rows])


def write_senteval_probing(path: Path, rows: Iterable[tuple[str, str, str]]) -> None:
    """One SentEval probing file: ``split<TAB>label<TAB>sentence`` (splits ``tr``, ``va``, ``te``)."""
    write_lines(path, [f"{split}\t{label}\t{s}" for split, label, s in rows])
