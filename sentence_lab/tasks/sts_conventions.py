"""The conventions papers report STS under, as data: which task, which result key, and which tool's numbers each
reproduces on SentEval's copies of the datasets. ``sentence_lab.reporting.compare --sts-convention <name>`` prints one.

SentEval's copies of STS12-16 and STS-B are tokenised and lowercased, and its SICK-R test set has 4,927 pairs; MTEB
scores the raw text (and its SICK-R has 9,927 test pairs), so MTEB's numbers cannot be reproduced on these copies,
nor can sentence-transformers' evaluators on raw STS-B: ``UNREPRODUCIBLE`` says so by name.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

STS = ("STS12", "STS13", "STS14", "STS15", "STS16")


@dataclass(frozen=True)
class StsConvention:
    """One way of reporting STS: ``rows`` are (task, dotted result key) pairs, in the order papers print them."""

    name: str
    reproduces: str
    rows: tuple[tuple[str, str], ...]

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(task for task, _ in self.rows)


CONVENTIONS: Mapping[str, StsConvention] = {c.name: c for c in (
    StsConvention(
        "senteval",
        "SentEval (Conneau & Kiela 2018; InferSent, QT, the probing paper): STS12-16 the mean over sub-datasets of "
        "Pearson's r; STS-B and SICK-R Pearson's r of a regressor trained on their train split",
        tuple((t, "all.pearson.mean") for t in STS) + (("STSBenchmark", "pearson"), ("SICKRelatedness", "pearson"))),
    StsConvention(
        "senteval_spearman",
        "SentEval's Spearman columns: STS12-16 the mean over sub-datasets of Spearman's rho (weighted by pairs: "
        "all.spearman.wmean); STS-B and SICK-R Spearman's rho of the trained regressor",
        tuple((t, "all.spearman.mean") for t in STS) + (("STSBenchmark", "spearman"), ("SICKRelatedness", "spearman"))),
    StsConvention(
        "simcse",
        "SimCSE's evaluation.py (Gao et al. 2021, appendix B; its SentEval fork): Spearman's rho of the cosine over "
        "all pairs of each of STS12-16 pooled ('all'), and of the cosine on STS-B's and SICK-R's test splits, no "
        "trained regressor",
        tuple((t, "pooled.spearman") for t in STS) + (("STSBenchmarkCosine", "test.spearman"),
                                                      ("SICKRelatednessCosine", "test.spearman"))),
)}

UNREPRODUCIBLE: Mapping[str, str] = {
    "mteb": "MTEB scores raw, untokenised text (SentEval's copies are tokenised and lowercased) and its SICK-R test "
            "set has 9,927 pairs against SentEval's 4,927: run the model in MTEB itself",
    "sentence-transformers": "sentence-transformers' EmbeddingSimilarityEvaluator reads raw STS-B text: run it on "
                             "the raw dataset",
}


def convention(name: str) -> StsConvention:
    """The convention called ``name``; a one-line ``ValueError`` naming the known ones (and why some are not)."""
    if name in CONVENTIONS:
        return CONVENTIONS[name]
    why = f" ({UNREPRODUCIBLE[name]})" if name in UNREPRODUCIBLE else ""
    raise ValueError(f"unknown STS convention {name!r}{why}: use one of {', '.join(CONVENTIONS)}")
