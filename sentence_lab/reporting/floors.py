"""The floor each probing score is read against, as ``compare`` and the report print it: the set's own rows of the
probing paper's Table 2 (majority, Length, NB-uni-tfidf, NB-bi-tfidf; ``evaluation.probing.floors``) and, for a
generated set, what the sentence's source alone predicts (``probing_gen.sources``)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sentence_lab.evaluation.probing.floors import FLOOR_NAMES, FLOOR_ROWS, highest_floor


def floors_of(result: Mapping[str, Any] | None) -> dict | None:
    floors = (result or {}).get("floors")
    return dict(floors) if isinstance(floors, Mapping) and floors else None


def floor_cell(result: Mapping[str, Any] | None) -> str:
    """The highest of a result's floors with its name (``68.81 NB-uni-tfidf``); empty without floors."""
    floors = floors_of(result)
    floor = highest_floor(floors) if floors else None
    return f"{floor[1]:.2f} {floor[0]}" if floor else ""


def floors_table(runs: Sequence[tuple[str, Mapping[str, Any]]], tasks: Sequence[str]) -> str:
    """Markdown: per probing task the set's floors; one row per distinct set when runs scored different sets of a
    task (named by the runs that scored it); empty when no result carries floors."""
    lines = []
    for task in tasks:
        seen: list[tuple[dict, dict | None, list[str]]] = []
        for name, doc in runs:
            result = doc.get("results", {}).get(task)
            floors = floors_of(result)
            if floors is None:
                continue
            source = (result or {}).get("source_baseline")
            for entry in seen:
                if entry[0] == floors:
                    entry[2].append(name)
                    break
            else:
                seen.append((floors, source, [name]))
        for floors, source, names in seen:
            label = task if len(seen) == 1 else f"{task} ({', '.join(names)})"
            cells = [f"{floors[row]:.2f}" if isinstance(floors.get(row), (int, float)) else "-" for row in FLOOR_ROWS]
            cells.append(f"{source['group']:.2f}" if isinstance(source, Mapping) and "group" in source else "-")
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    if not lines:
        return ""
    header = "| floor | " + " | ".join(FLOOR_NAMES[row] for row in FLOOR_ROWS) + " | source only |"
    return "\n".join([header, "|---" * (len(FLOOR_ROWS) + 2) + "|", *lines]) + (
        "\n\nFloors: the probing paper's baselines (Conneau et al. 2018, Table 2, top block) computed on each set: the "
        "majority label, a linear classifier on sentence length alone, Naive Bayes on the tf-idf of words "
        "(and bigrams); source only: the label predicted from the sentence's source alone (a generated set's "
        "meta.json). A score near its floor says the set, not the encoder, gives the label away.\n")
