"""What removing a property did to each task (``evaluation.amnesic``), as ``compare`` and the report print it: per
run and property, each task's score before, after the removal and after the control, and the drop beyond the
control; with the run's per-item predictions, the paired test of the after-removal against the control predictions
on the same items (``reporting.paired``)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sentence_lab.reporting.paired import corrected, metric_for, paired_difference

# Draws of each paired test here: a property's tasks are tested in one go, so the tests number three times a run's
# usual (999: about 4 s a test on 10k items; compare's 9,999 about 40 s)
AMNESIC_RESAMPLES = 999


def _cell(value: Any, percent: bool) -> str:
    if not isinstance(value, (int, float)):
        return "-"
    return f"{value:.2f}" if percent else f"{value:.4f}"


def amnesic_rows(doc: Mapping[str, Any], items: Mapping[str, Mapping] | None,
                 resamples: int = AMNESIC_RESAMPLES) -> list[tuple[str, str, dict]]:
    """(property, task, row) for every task scored after a removal; ``row`` adds to the results' figures the drop
    beyond the control and, where the items allow, the paired test (``difference``, ``low``, ``high``, ``p``,
    ``p_bh`` corrected over the property's tasks)."""
    out = []
    for prop, entry in (doc.get("amnesic") or {}).items():
        if not isinstance(entry, Mapping) or "tasks" not in entry:
            continue
        tested: list[tuple[str, Any]] = []
        for task, row in entry["tasks"].items():
            extra: dict[str, Any] = {}
            if row.get("drop") is not None and row.get("control_drop") is not None:
                extra["beyond_control"] = row["drop"] - row["control_drop"]
            task_items: dict[str, Any] | None = dict((items or {}).get(task) or {}) or None
            result = doc.get("results", {}).get(task)
            after, control = f"amnesic/{prop}/after/pred", f"amnesic/{prop}/control/pred"
            if task_items is not None and result is not None and after in task_items and control in task_items:
                metric = metric_for(result["regime"], result["main_metric"])
                tested.append((task, paired_difference(task_items[after], task_items[control], task_items, metric,
                                                       resamples=resamples)))
            out.append((prop, task, {**row, **extra}))
        for (task, test), p_bh in zip(tested, corrected([t.p_value for _, t in tested])):
            row = next(r for p, t, r in out if p == prop and t == task)
            row.update(difference=test.difference, low=test.low, high=test.high, p=test.p_value, p_bh=p_bh)
    return out


def amnesic_table(runs: Sequence[tuple[str, Mapping[str, Any]]], items: Sequence[Mapping | None] | None = None,
                  resamples: int = AMNESIC_RESAMPLES) -> str:
    """Markdown: one table per run that removed properties; empty when none did."""
    blocks = []
    for i, (name, doc) in enumerate(runs):
        rows = amnesic_rows(doc, items[i] if items else None, resamples)
        if not rows:
            continue
        lines = [f"| {name}: removed | task | before | after | control | drop beyond the control | after minus "
                 "control, 95% interval | p (BH) |", "|---|---|---|---|---|---|---|---|"]
        for prop, task, row in rows:
            percent = str(doc["results"].get(task, {}).get("main_metric", "acc")).endswith("acc")
            directions = (doc["amnesic"][prop] or {}).get("directions")
            tested = (f"{_cell(row['difference'], percent)} [{_cell(row['low'], percent)}, "
                      f"{_cell(row['high'], percent)}]" if "difference" in row else "-")
            p_cell = f"{row['p_bh']:.4f}" + (" ✓" if row["p_bh"] < 0.05 else "") if "p_bh" in row else "-"
            lines.append(f"| {prop} ({directions} directions) | {task} | {_cell(row.get('before'), percent)} | "
                         f"{_cell(row.get('after'), percent)} | {_cell(row.get('control'), percent)} | "
                         f"{_cell(row.get('beyond_control'), percent)} | {tested} | {p_cell} |")
        blocks.append("\n".join(lines))
    if not blocks:
        return ""
    return "\n\n".join(blocks) + (
        "\n\nAmnesic probing (Elazar et al. 2021): each property's directions removed from the vectors (INLP) until a "
        "fresh linear probe is within 2 points of the majority on dev; the control removes as many random "
        "directions. Drop beyond the control: (before - after) - (before - control); the paired test compares the "
        "after-removal and control predictions on the same test items (BH: corrected over the property's tasks); "
        "✓: p (BH) < 0.05\n")
