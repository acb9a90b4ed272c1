"""Writes each task in SentEval's probing layout and ``meta.json`` beside them."""
from __future__ import annotations

import json
from pathlib import Path

from evaluation.results import atomic_write_text

from .task_output import TaskOutput


class ProbingWriter:
    def __init__(self, out: Path, meta: dict) -> None:
        self.out = Path(out)
        self.meta = {**meta, "layout": "senteval probing: tr|va|te<TAB>label<TAB>sentence", "tasks": {},
                     "skipped": {}}
        self._flush()

    def _flush(self) -> None:
        atomic_write_text(self.out / "meta.json", json.dumps(self.meta, indent=2, default=str) + "\n")

    def update_source(self, **values) -> None:
        self.meta["source"].update({k: v for k, v in values.items() if v is not None})
        self._flush()

    def skip(self, task: str, reason: str) -> None:
        self.meta["skipped"][task] = reason
        self._flush()

    def write(self, output: TaskOutput) -> None:
        if not output.rows:
            self.skip(output.task, "the corpus yielded no sentence for it")
            return
        text = "".join(f"{split}\t{label}\t{sentence}\n" for split, label, sentence in output.rows)
        atomic_write_text(self.out / output.file_name, text)
        counts = output.counts()
        entry = {"file": output.file_name, "method": output.method, "classes": len(counts["tr"]),
                 "sizes": {s: sum(c.values()) for s, c in counts.items()}, "counts": counts, **output.extra}
        if output.approximation:
            entry["approximation"] = output.approximation
        self.meta["tasks"][output.task] = entry
        self._flush()

    def finish(self, seconds: float, stages: dict[str, float] | None = None) -> dict:
        self.meta["seconds"] = round(seconds, 1)
        if stages:
            self.meta["stage_seconds"] = {k: round(v, 1) for k, v in stages.items()}
        self._flush()
        return self.meta
