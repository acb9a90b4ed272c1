"""What a task generator hands to the writer: its rows and how they were made."""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sentence_lab.tasks.probing import PROBING_FILES


@dataclass
class TaskOutput:
    task: str  # SentEval's task name, e.g. "BigramShift"
    rows: list[tuple[str, str, str]]  # (tr|va|te, label, sentence)
    method: str  # how labels were made, one line
    approximation: str | None = None  # set when the task departs from the paper's construction
    extra: dict = field(default_factory=dict)

    @property
    def file_name(self) -> str:
        return f"{PROBING_FILES[self.task]}.txt"

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, Counter] = {s: Counter() for s in ("tr", "va", "te")}
        for split, label, _ in self.rows:
            out[split][label] += 1
        return {s: dict(sorted(c.items())) for s, c in out.items()}


def rows_from_splits(splits: Mapping[str, Sequence[tuple[object, str]]]) -> list[tuple[str, str, str]]:
    """{split: [(label, sentence)]} -> rows in split order."""
    return [(split, str(label), sentence) for split in ("tr", "va", "te") for label, sentence in splits[split]]
