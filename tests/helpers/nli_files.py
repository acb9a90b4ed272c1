"""NLI fixture files whose premises each carry one hypothesis of every label, as SNLI's do: what triples need."""
from __future__ import annotations

from pathlib import Path

LABELS = ("entailment", "neutral", "contradiction")


def nli_rows(premises: int) -> list[tuple[str, str, str]]:
    """``premises`` premises with one hypothesis of each label, then one premise with an entailment only."""
    rows = []
    for i in range(premises):
        rows += [(f"premise number {i} .", f"it holds {i} .", "entailment"),
                 (f"premise number {i} .", f"maybe {i} .", "neutral"),
                 (f"premise number {i} .", f"never {i} .", "contradiction")]
    return rows + [("a lone premise .", "it holds .", "entailment")]


def write_nli_tsv(path: Path, premises: int) -> Path:
    """A TSV with a header (premise, hypothesis, label), as data=nli's training split reads."""
    path.write_text("\n".join(["premise\thypothesis\tlabel", *("\t".join(row) for row in nli_rows(premises))]) + "\n",
                    encoding="utf-8")
    return path


def write_infersent(folder: Path, split: str, premises: int) -> Path:
    """InferSent's layout (s1.<split>, s2.<split>, labels.<split>), as data=nli's SNLI splits read."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = nli_rows(premises)
    for k, name in enumerate(("s1", "s2", "labels")):
        (folder / f"{name}.{split}").write_text("\n".join(row[k] for row in rows) + "\n", encoding="utf-8")
    return folder
