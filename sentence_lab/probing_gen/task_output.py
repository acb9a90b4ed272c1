"""What a task generator hands to the writer: its rows, where each came from, and how they were made."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sentence_lab.probing_gen.sampling import item_key
from sentence_lab.tasks.probing import PROBING_FILES


@dataclass
class TaskOutput:
    task: str  # SentEval's task name, e.g. "BigramShift"
    rows: list[tuple[str, str, str]]  # (tr|va|te, label, sentence)
    method: str  # how labels were made, one line
    approximation: str | None = None  # set when the task departs from the paper's construction
    extra: dict = field(default_factory=dict)
    docs: list[int] = field(default_factory=list)  # each row's document (probing_gen.sources), parallel to rows
    offered: Counter = field(default_factory=Counter)  # (document, label) -> distinct items before balancing

    @classmethod
    def from_splits(cls, task: str, splits: Mapping[str, Sequence[tuple[object, str, int]]], method: str,
                    offered: Counter | None = None, **more) -> TaskOutput:
        """``splits``: {split: [(label, sentence, document)]}, as the balancing functions of ``sampling`` give."""
        ordered = [(split, row) for split in ("tr", "va", "te") for row in splits.get(split, ())]
        return cls(task, [(split, str(label), sentence) for split, (label, sentence, _) in ordered], method,
                   docs=[doc for _, (_, _, doc) in ordered], offered=offered if offered is not None else Counter(),
                   **more)

    @property
    def file_name(self) -> str:
        return f"{PROBING_FILES[self.task]}.txt"

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, Counter] = {s: Counter() for s in ("tr", "va", "te")}
        for split, label, _ in self.rows:
            out[split][label] += 1
        return {s: dict(sorted(c.items())) for s, c in out.items()}


def offered_counts(by_class: Mapping[Any, Iterable[tuple[int, Any]]]) -> Counter:
    """(document, label) -> how many distinct items that document offered the class, before any balancing."""
    out: Counter = Counter()
    for label, items in by_class.items():
        seen = {(doc, item_key(item)) for doc, item in items}
        out.update((doc, str(label)) for doc, _ in seen)
    return out
