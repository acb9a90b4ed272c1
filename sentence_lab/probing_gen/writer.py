"""Writes each task in SentEval's probing layout and ``meta.json`` beside them."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

from sentence_lab.evaluation.probing.floors import probing_floors
from sentence_lab.probing_gen.sources import Sources, source_baseline
from sentence_lab.probing_gen.task_output import TaskOutput
from sentence_lab.text.files import atomic_write_text


class ProbingWriter:
    def __init__(self, out: Path, meta: dict) -> None:
        self.out = Path(out)
        self.meta = {**meta, "layout": "senteval probing: tr|va|te<TAB>label<TAB>sentence", "tasks": {},
                     "skipped": {}}
        self.sources: Sources | None = None
        self._flush()

    def set_sources(self, sources: Sources) -> None:
        """Where the sentences come from: each task written after this records its classes per source."""
        self.sources = sources
        self.meta["source"]["sources"] = sources.describe()
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
        """Write a task that ``evaluate.py`` can run; one with an empty split, or a dev/test label never seen in
        training, is recorded as skipped with the counts it got and the ones it asked for."""
        problem = self.unusable(output)
        if problem:
            self.skip(output.task, problem)
            return
        text = "".join(f"{split}\t{label}\t{sentence}\n" for split, label, sentence in output.rows)
        atomic_write_text(self.out / output.file_name, text)
        counts = output.counts()
        entry = {"file": output.file_name, "method": output.method, "classes": len(counts["tr"]),
                 "sizes": {s: sum(c.values()) for s, c in counts.items()}, "counts": counts, **output.extra}
        if output.approximation:
            entry["approximation"] = output.approximation
        entry["shortfall"] = {s: max(self._asked(s) - entry["sizes"][s], 0) for s in ("tr", "va", "te")}
        if self.sources is not None and output.docs:
            entry["by_source"] = self._by_source(output, self.sources)
            labels = {s: [label for split, label, _ in output.rows if split == s] for s in ("tr", "te")}
            docs = {s: [d for (split, _, _), d in zip(output.rows, output.docs) if split == s] for s in ("tr", "te")}
            entry["source_baseline"] = source_baseline(labels, docs, self.sources)
        parts = {s: ([t for split, _, t in output.rows if split == s], [label for split, label, _ in output.rows
                                                                          if split == s]) for s in ("tr", "va", "te")}
        entry["floors"] = probing_floors(parts["tr"], parts["va"], parts["te"])
        self.meta["tasks"][output.task] = entry
        self._flush()

    def _asked(self, split: str) -> int:
        return int(self.meta["settings"].get({"tr": "train", "va": "dev", "te": "test"}[split], 0))

    @staticmethod
    def _by_source(output: TaskOutput, sources: Sources) -> dict:
        """Per group: the class counts per split, and each class's sentences offered before balancing (a class the
        group has few of caps what it gives of every class: the shortfall's cause). Tasks of more than
        ``_LISTED_CLASSES`` classes give the smallest and largest count instead of every class's."""
        counts: dict[str, dict[str, Counter]] = defaultdict(lambda: {s: Counter() for s in ("tr", "va", "te")})
        for (split, label, _), doc in zip(output.rows, output.docs):
            counts[sources.group(doc)][split][label] += 1
        offered: dict[str, Counter] = defaultdict(Counter)
        for (doc, label), n in output.offered.items():
            offered[sources.group(doc)][label] += n
        classes = sorted({label for _, label, _ in output.rows})
        out = {}
        for group in sorted(set(counts) | set(offered)):
            out[group] = {"counts": {s: _summary(c, classes) for s, c in counts[group].items()},
                          "offered": _summary(offered[group], classes)}
        return out

    def unusable(self, output: TaskOutput) -> str | None:
        """Why ``output`` would be refused by the evaluation (None when it is usable)."""
        counts = output.counts()
        asked = {split: self._asked(split) for split in ("tr", "va", "te")}
        got = ", ".join(f"{split} {sum(counts[split].values())} of {asked[split]}" for split in ("tr", "va", "te"))
        fix = "give a larger corpus, or lower train=, dev=, test="
        if any(not counts[split] for split in ("tr", "va", "te")):
            return f"too little text: made {got} sentences; every split needs some: {fix}"
        unseen = sorted({label for split in ("va", "te") for label in counts[split]} - set(counts["tr"]))
        if unseen:
            return f"too little text: label(s) {unseen[:5]} of dev/test never occur in training ({got}): {fix}"
        return None

    def finish(self, seconds: float, stages: dict[str, float] | None = None) -> dict:
        self.meta["seconds"] = round(seconds, 1)
        if stages:
            self.meta["stage_seconds"] = {k: round(v, 1) for k, v in stages.items()}
        self._flush()
        return self.meta


_LISTED_CLASSES = 30


def _summary(counts: Counter, classes: list[str]) -> dict:
    """Every class's count, or for a task of many classes (WordContent) the total, smallest and largest."""
    if len(classes) <= _LISTED_CLASSES:
        return {c: counts.get(c, 0) for c in classes}
    values = [counts.get(c, 0) for c in classes]
    return {"total": sum(values), "per_class_min": min(values), "per_class_max": max(values)}
