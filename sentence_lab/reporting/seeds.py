"""Runs that differ only in their training seed, summarised: per task the mean, the standard deviation and a 95%
interval of the final score; differences between configurations tested against what the seeds explain.

Runs are grouped by their command line's overrides less ``seed=...`` (a ``-m seed=1,2,3`` sweep, or runs launched
apart with the same settings). The interval is Student's t over the seeds (mean +- t(0.975, n-1) x sd / sqrt(n)): a
handful of seeds is a small sample of what training can give, and the normal interval would be too narrow for it
(with 3 seeds t is 4.30, against 1.96). The classifier's own spread (``evaluation.seeds``: each run's
``main_score_sd``) is shown beside the training seeds' when the runs measured it.

Between configurations (each against the first group): with the per-item predictions of every run's last epoch, a
two-level bootstrap (seeds, then items; ``paired.seeds_difference``); without them, Welch's t-test on the seeds'
scores. Either way corrected for the tasks compared (Benjamini-Hochberg).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import t as student_t
from scipy.stats import ttest_ind

from sentence_lab.evaluation.results import items_path, read_items
from sentence_lab.reporting.paired import aligned, corrected, metric_for, seeds_difference
from sentence_lab.reporting.runs import Run

CONFIDENCE = 0.95
DIFFERENCE_RESAMPLES = 1999


@dataclass
class SeedGroup:
    """Runs of one configuration, one a seed."""

    name: str  # the shared overrides, or the first run's name
    runs: list[Run]

    def finals(self, task: str) -> list[float]:
        return [v for v in (run.final(task) for run in self.runs) if v is not None]


def group_by_seed(runs: list[Run]) -> list[SeedGroup]:
    """Training runs grouped by their overrides less the seed, in the order their first run comes."""
    groups: dict[tuple[str, ...], SeedGroup] = {}
    for run in runs:
        if run.reference:
            continue
        key = tuple(sorted(o for o in run.overrides if not o.lstrip("+~").startswith("seed=")))
        name = " ".join(key) or "defaults"
        groups.setdefault(key, SeedGroup(name, [])).runs.append(run)
    return list(groups.values())


def interval(values: list[float]) -> tuple[float, float, float, float]:
    """(mean, sd, low, high): the sample sd (n - 1) and Student's t interval of the mean; one value: sd and interval
    NaN."""
    x = np.asarray(values, dtype=np.float64)
    mean = float(x.mean())
    if len(x) < 2:
        return mean, float("nan"), float("nan"), float("nan")
    sd = float(x.std(ddof=1))
    half = float(student_t.ppf(0.5 + CONFIDENCE / 2, len(x) - 1)) * sd / np.sqrt(len(x))
    return mean, sd, mean - half, mean + half


def curve_band(group: SeedGroup, task: str) -> dict[int, tuple[float, float, float, float]]:
    """Per epoch every seed evaluated, :func:`interval` of the seeds' scores."""
    epochs = sorted(set.intersection(*(set(run.curves.get(task, {})) for run in group.runs)))
    return {epoch: interval([run.curves[task][epoch] for run in group.runs]) for epoch in epochs}


def _classifier_sd(group: SeedGroup, task: str) -> float | None:
    """The mean over the group's runs of the classifier seeds' sd of the last epoch (None when not measured)."""
    values = [run.last_results.get("results", {}).get(task, {}).get("main_score_sd") for run in group.runs]
    values = [v for v in values if isinstance(v, (int, float))]
    return float(np.mean(values)) if values else None


def _last_items(run: Run) -> dict | None:
    if run.last_path is None or not run.last_results.get("items_file"):
        return None
    path = items_path(run.last_path)
    return read_items(path) if path.is_file() else None


def difference(first: SeedGroup, other: SeedGroup, task: str) -> tuple[float, float, str] | None:
    """(difference of the means, p-value, method) of ``other`` against ``first`` on ``task``; None with fewer than
    two seeds a side."""
    a, b = first.finals(task), other.finals(task)
    if len(a) < 2 or len(b) < 2:
        return None
    runs = first.runs + other.runs
    items = [found[task] for run in runs if (found := _last_items(run)) is not None and "pred" in found.get(task, {})]
    if len(items) == len(runs):
        for it in items[1:]:
            aligned(items[0], it, task)
        result = first.runs[0].last_results["results"][task]
        metric = metric_for(result["regime"], result["main_metric"])
        preds_a = [it["pred"] for it in items[:len(first.runs)]]
        preds_b = [it["pred"] for it in items[len(first.runs):]]
        test = seeds_difference(preds_b, preds_a, items[0], metric, resamples=DIFFERENCE_RESAMPLES)
        return test.difference, test.p_value, "two-level bootstrap"
    welch = ttest_ind(b, a, equal_var=False)
    return float(np.mean(b) - np.mean(a)), float(welch.pvalue), "Welch's t"


def seeds_table(runs: list[Run], tasks: list[str]) -> str:
    """The report's section on seeds: per configuration with two seeds or more, each task's final score as mean +-
    sd [95% interval] over seeds (and the classifier seeds' sd when measured); below it each configuration against
    the first, differences the seeds do not explain marked. Empty when no configuration has two seeds."""
    groups = [g for g in group_by_seed(runs) if len(g.runs) >= 2]
    if not groups:
        return ""
    lines = [f"Seeds: final scores over the runs of each configuration that differ only in their seed (mean ± sd "
             f"[{CONFIDENCE:.0%} Student's t interval]; classifier sd: the spread over evaluation.seeds, where "
             "measured).", "", "| configuration | seeds | " + " | ".join(tasks) + " |", "|---" * (len(tasks) + 2) + "|"]
    for group in groups:
        cells = []
        for task in tasks:
            values = group.finals(task)
            if not values:
                cells.append("")
                continue
            mean, sd, low, high = interval(values)
            cell = f"{mean:.2f} ± {sd:.2f} [{low:.2f}, {high:.2f}]" if len(values) > 1 else f"{mean:.2f}"
            if (classifier := _classifier_sd(group, task)) is not None:
                cell += f" (classifier sd {classifier:.2f})"
            cells.append(cell)
        lines.append(f"| {group.name} | {len(group.runs)} | " + " | ".join(cells) + " |")
    if len(groups) > 1:
        lines += ["", f"Each configuration against `{groups[0].name}`: difference of the means, p-value corrected for "
                  "the tasks (Benjamini-Hochberg); ▲/▼ where the seeds do not explain it (corrected p < 0.05).", "",
                  "| configuration | " + " | ".join(tasks) + " |", "|---" * (len(tasks) + 1) + "|"]
        for group in groups[1:]:
            tested = {task: d for task in tasks if (d := difference(groups[0], group, task)) is not None}
            adjusted = dict(zip(tested, corrected([p for _, p, _ in tested.values()])))
            cells = []
            for task in tasks:
                if task not in tested:
                    cells.append("")
                    continue
                diff, _, method = tested[task]
                mark = (" ▲" if diff > 0 else " ▼") if adjusted[task] < 0.05 else ""
                cells.append(f"{diff:+.2f}{mark} (p {adjusted[task]:.3f}, {method})")
            lines.append(f"| {group.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
