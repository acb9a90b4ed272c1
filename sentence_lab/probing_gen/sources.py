"""Where each sentence came from: its document, and its group (the folder directly under the corpus root).

A label that differs in rate between sources (present-tense image captions beside past-tense news) can be read
from the source's style instead of from the property; the generator balances every task's classes within each
source (``balance_by``) and measures what the source alone predicts (``source_baseline``).
"""
from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path

import numpy as np

from sentence_lab.evaluation.probing.floors import majority_accuracy, most_frequent

BALANCE_LEVELS = ("document", "group", "none")
SAMPLED_DOCUMENTS = 1000


def file_group(path: Path, corpus: Path) -> str:
    """The folder directly under ``corpus`` that holds ``path`` (``newstest`` for ``newstest/en-fr/x.fr``); the
    files lying in the root, or a corpus given as one file, form the group ``.``."""
    if corpus.is_file():
        return "."
    parts = Path(os.path.abspath(path)).relative_to(os.path.abspath(corpus)).parts  # a link stays where it lies
    return parts[0] if len(parts) > 1 else "."


class Sources:
    """Each document's file and group; ``unit(doc)`` is the source a task's classes are balanced within."""

    def __init__(self, files: Sequence[Path], corpus: Path, documents_per_file: Sequence[int],
                 balance_by: str = "document") -> None:
        if balance_by not in BALANCE_LEVELS:
            raise ValueError(f"balance_by={balance_by}: choose from {list(BALANCE_LEVELS)}")
        if len(documents_per_file) != len(files):
            raise ValueError(f"{len(documents_per_file)} document counts for {len(files)} files")
        self.balance_by = balance_by
        self.groups = sorted({file_group(p, corpus) for p in files})
        index = {g: k for k, g in enumerate(self.groups)}
        per_file = np.asarray(documents_per_file, dtype=np.int64)
        self.doc_group = np.repeat(np.asarray([index[file_group(p, corpus)] for p in files], dtype=np.int64),
                                   per_file)
        self.files_per_group = Counter(file_group(p, corpus) for p in files)

    def group(self, doc: int) -> str:
        return self.groups[int(self.doc_group[doc])]

    def unit(self, doc: int) -> Hashable:
        """The balancing unit of a document: its group, itself, or one unit for the whole corpus."""
        if self.balance_by == "group":
            return int(self.doc_group[doc])
        return int(doc) if self.balance_by == "document" else 0

    @property
    def samples_per_unit(self) -> bool:
        """Whether a sample is kept per balancing unit (a reservoir each, so a source keeps its sentences of a class
        rare elsewhere): by group always, by document while there are at most ``SAMPLED_DOCUMENTS`` documents (what
        is kept then grows with the corpus, up to each reservoir's size); beyond, one sample serves the corpus and a
        class rare in a document shortens the task."""
        return self.balance_by == "group" or (self.balance_by == "document" and
                                              len(self.doc_group) <= SAMPLED_DOCUMENTS)

    def sample_unit(self, doc: int) -> Hashable:
        """The source a sample is kept per: the balancing unit where ``samples_per_unit``, else one for the corpus."""
        return self.unit(doc) if self.samples_per_unit else 0

    def describe(self) -> dict:
        documents = Counter(self.groups[g] for g in self.doc_group.tolist())
        return {"balance_by": self.balance_by,
                "groups": {g: {"files": self.files_per_group[g], "documents": documents[g]} for g in self.groups}}


def source_baseline(labels: Mapping[str, Sequence[str]], docs: Mapping[str, Sequence[int]], sources: Sources) -> dict:
    """Test accuracy (%) of the label predicted from the source alone: per source, the label most frequent in
    training (ties: the first in sorted order; a source unseen in training: the training majority), for the
    source as a group and as a document; beside it the majority baseline."""
    train_majority = most_frequent(Counter(labels["tr"]))
    out = {"majority": majority_accuracy(labels["tr"], labels["te"])}
    for level, key in (("group", sources.group), ("document", int)):
        seen: dict[Hashable, Counter] = defaultdict(Counter)
        for label, doc in zip(labels["tr"], docs["tr"]):
            seen[key(doc)][label] += 1
        predict = {source: most_frequent(counts) for source, counts in seen.items()}
        out[level] = _accuracy([predict.get(key(doc), train_majority) for doc in docs["te"]], labels["te"])
    return out


def _accuracy(predicted: Sequence[str], gold: Sequence[str]) -> float:
    return round(100.0 * sum(p == g for p, g in zip(predicted, gold)) / max(len(gold), 1), 2)
