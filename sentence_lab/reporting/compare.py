"""Runs side by side: ``python -m sentence_lab.reporting.compare A.json B.json [...] [--tasks probing] [--out t.md]``.

Rows are tasks, columns are runs (results files of ``evaluate.py`` or of the training callback), cells the main
score. Every run after the first is compared with the first: ``▲``/``▼`` where the difference exceeds the noise,
``≈`` where it lies inside it. The noise is the seed spread when the runs were scored with several classifier
seeds (``evaluation.seeds``: a difference within the larger sd is what reseeding alone produces); with one seed,
the sampling error of the test examples (the interval a bootstrap over them gives): binomial for accuracies,
Fisher's z for correlations, 95% two-sided.

When every file has its per-item predictions beside it (``<results>.items.npz``, written since results schema 2),
a second table tests each run against the first on the same test items (``sentence_lab.reporting.paired``): the
difference, its 95% paired-bootstrap interval, the permutation p-value and the p-value corrected for the number of
tasks compared (Benjamini-Hochberg); ``--no-paired`` leaves it out.
"""
from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sentence_lab.evaluation.results import probe_details, read_items, read_results
from sentence_lab.reporting.amnesic import AMNESIC_RESAMPLES, amnesic_table
from sentence_lab.reporting.floors import floor_cell, floors_table
from sentence_lab.reporting.paired import RESAMPLES, aligned, corrected, metric_for, paired_difference
from sentence_lab.tasks.registry import TASKS, UnknownTask, get_path, resolve_tasks
from sentence_lab.tasks.sts_conventions import CONVENTIONS, StsConvention, convention
from sentence_lab.text.files import atomic_write_text

Z95 = 1.96


def _n(result: dict) -> int | None:
    for key in ("ntest", "ndev"):
        if isinstance(result.get(key), int) and result[key] > 0:
            return result[key]
    for key in ("pooled", "test", "dev"):
        if isinstance(result.get(key), dict) and result[key].get("nsamples"):
            return int(result[key]["nsamples"])
    return None


def noise_band(a: dict, b: dict) -> tuple[float | None, str]:
    """How far apart two main scores may be by chance alone, and which rule said so."""
    if "main_score_sd" in a or "main_score_sd" in b:
        return max(a.get("main_score_sd", 0.0), b.get("main_score_sd", 0.0)), "seed sd"
    metric = str(a.get("main_metric", ""))
    na, nb = _n(a), _n(b)
    if not na or not nb:
        return None, ""
    sa, sb = a["main_score"], b["main_score"]
    if metric.endswith("acc"):  # percent
        se = [100 * math.sqrt(max(p / 100 * (1 - p / 100), 1e-12) / n) for p, n in ((sa, na), (sb, nb))]
        return Z95 * math.hypot(*se), "test sampling"
    if "pearson" in metric or "spearman" in metric:
        if na <= 3 or nb <= 3 or abs(sa) >= 1 or abs(sb) >= 1:
            return None, ""
        # the z difference that is significant, mapped back to r around the first score
        dz = Z95 * math.sqrt(1 / (na - 3) + 1 / (nb - 3))
        return abs(math.tanh(math.atanh(sa) + dz) - sa), "test sampling"
    return None, ""


def _fmt(score, sd=None, percent: bool | None = None) -> str:
    """Accuracies (percent) with 2 decimals, correlations (fractions) with 4."""
    if score is None:
        return "n/a"
    digits = 2 if (percent if percent is not None else abs(score) > 1.5) else 4
    return f"{score:.{digits}f}" + (f" ± {sd:.{digits}f}" if sd is not None else "")


def with_metric(doc: Mapping[str, Any], metric: str | None) -> dict[str, Any]:
    """The run with each task's ``main_score`` replaced by ``metric`` (a dotted path, e.g. ``pooled.spearman``)
    where the task has it."""
    if not metric:
        return dict(doc)
    results = {}
    for task, r in doc.get("results", {}).items():
        value = get_path(r, metric)
        if isinstance(value, (int, float)):
            r = {k: v for k, v in r.items() if k != "main_score_sd"} | {"main_score": value, "main_metric": metric}
        results[task] = r
    return {**doc, "results": results}


def with_convention(doc: Mapping[str, Any], sts: StsConvention) -> dict[str, Any]:
    """The run's STS tasks under ``sts``: each of its tasks with ``main_score`` read from the convention's key (all
    labelled with the convention, so the table gives their mean); the other tasks left out."""
    results = {}
    for task, key in sts.rows:
        r = doc.get("results", {}).get(task)
        value = get_path(r, key) if r is not None else None
        if isinstance(value, (int, float)):
            results[task] = {k: v for k, v in r.items() if k != "main_score_sd"} | {
                "main_score": value, "main_metric": f"{sts.name}:{'spearman' if 'spearman' in key else 'pearson'}"}
    return {**doc, "results": results}


def compare_table(runs: list[tuple[str, dict]], tasks: list[str] | None = None) -> str:
    present = [t for t in TASKS if any(t in doc["results"] for _, doc in runs)]
    rows = [t for t in (tasks or present) if t in present]
    floor = {t: next((f for f in (floor_cell(doc["results"].get(t)) for _, doc in runs) if f), "") for t in rows}
    floored = any(floor.values())
    header = "| task | " + " | ".join(name for name, _ in runs) + (" | floor |" if floored else " |")
    lines = [header, "|---" * (len(runs) + 1 + floored) + "|"]
    rules = set()
    for task in rows:
        base = runs[0][1]["results"].get(task)
        cells = []
        for i, (_, doc) in enumerate(runs):
            r = doc["results"].get(task)
            if r is None or r.get("main_score") is None:
                reason = "error" if task in doc.get("errors", {}) else "-"
                cells.append(reason)
                continue
            cell = _fmt(r["main_score"], r.get("main_score_sd"), str(r.get("main_metric", "")).endswith("acc"))
            if i and base is not None and base.get("main_score") is not None:
                band, rule = noise_band(base, r)
                diff = r["main_score"] - base["main_score"]
                if band is not None:
                    rules.add(rule)
                    cell += " ≈" if abs(diff) <= band else (" ▲" if diff > 0 else " ▼")
            cells.append(cell)
        lines.append(f"| {task} | " + " | ".join(cells) + (f" | {floor[task] or '-'} |" if floored else " |"))
    common = [t for t in rows if all(doc["results"].get(t, {}).get("main_score") is not None for _, doc in runs)]
    if len(common) > 1 and len({runs[0][1]["results"][t].get("main_metric") for t in common}) == 1:
        means = [sum(doc["results"][t]["main_score"] for t in common) / len(common) for _, doc in runs]
        percent = str(runs[0][1]["results"][common[0]].get("main_metric", "")).endswith("acc")
        lines.append(f"| mean of {len(common)} | " + " | ".join(_fmt(m, percent=percent) for m in means) +
                     (" | |" if floored else " |"))
    legend = ("▲/▼: above/below the first run by more than the noise; ≈: inside it (" +
              (", ".join(sorted(rules)) or "no noise estimate") + "); scores are each task's main score "
              "(SentEval's scale: accuracies in %, correlations as fractions)")
    protocols = {(doc.get("protocol", {}).get("name"), doc.get("protocol", {}).get("preset")) for _, doc in runs}
    if len(protocols) > 1:
        legend += "; WARNING: the runs used different protocols"
    presets = sorted({preset for _, preset in protocols if preset})
    if presets:
        legend += f"; the scores of preset {', '.join(presets)} are not SentEval's protocol (docs/curves.md)"
    if floored:
        legend += "; floor: the highest of the set's own baselines (table below)"
    floors = floors_table(runs, rows)
    return "\n".join(lines) + "\n\n" + legend + "\n" + (f"\n{floors}" if floors else "") + probes_table(runs, rows)


def probes_table(runs: list[tuple[str, dict]], rows: list[str]) -> str:
    """Which probe scored each task of each run and what it chose on dev, with selectivity and codelength where
    the run measured them; empty when no result names its probe."""
    cells = {task: [probe_details(doc["results"].get(task, {})) for _, doc in runs] for task in rows}
    cells = {task: row for task, row in cells.items() if any(row)}
    if not cells:
        return ""
    lines = ["", "| probe | " + " | ".join(name for name, _ in runs) + " |", "|---" * (len(runs) + 1) + "|"]
    lines += [f"| {task} | " + " | ".join(c or "-" for c in row) + " |" for task, row in cells.items()]
    return "\n".join(lines) + "\n\nMLP h/p: a sigmoid MLP with h hidden units and dropout p, chosen on dev with its " \
        "L2 value; selectivity: accuracy minus the control task's (Hewitt & Liang 2019); " \
        "MDL: online codelength (Voita & " \
        "Titov 2020) and the uniform codelength over it\n"


def items_of(path: str | Path, doc: dict) -> dict | None:
    """The per-item predictions beside a results file (its ``items_file``), or None when it has none."""
    name = doc.get("items_file")
    if not name or not (Path(path).parent / name).is_file():
        return None
    return read_items(Path(path).parent / name)


def paired_table(runs: list[tuple[str, dict]], items: list[dict | None], rows: list[str],
                 resamples: int = RESAMPLES) -> str:
    """Each run against the first on the same test items: per task the difference (run minus first), its 95%
    interval and p-values, raw and corrected over the tasks of that comparison; empty without items files."""
    if len(runs) < 2 or items[0] is None:
        return ""
    lines = []
    for (name, doc), run_items in list(zip(runs, items))[1:]:
        if run_items is None:
            continue
        tested = []
        for task in rows:
            a, b = items[0].get(task), run_items.get(task)
            result = doc["results"].get(task)
            if a is None or b is None or result is None or "pred" not in a or "pred" not in b:
                continue
            aligned(a, b, task)
            metric = metric_for(result["regime"], result["main_metric"])
            tested.append((task, paired_difference(b["pred"], a["pred"], a, metric, resamples=resamples)))
        if not tested:
            continue
        adjusted = corrected([t.p_value for _, t in tested])
        lines += ["", f"| {name} minus {runs[0][0]} | difference | 95% interval | p | p (BH) |",
                  "|---|---|---|---|---|"]
        for (task, t), p_bh in zip(tested, adjusted):
            percent = str(doc["results"][task].get("main_metric", "")).endswith("acc")
            mark = " ✓" if p_bh < 0.05 else ""
            lines.append(f"| {task} | {_fmt(t.difference, percent=percent)}{mark} | [{_fmt(t.low, percent=percent)}, "
                         f"{_fmt(t.high, percent=percent)}] | {t.p_value:.4f} | {p_bh:.4f} |")
    if not lines:
        return ""
    return "\n".join(lines) + ("\n\nPaired tests on the same test items: the difference of each task's main score, "
                               "its 95% paired-bootstrap interval (items resampled within folds and sub-datasets), "
                               "the permutation p-value (McNemar's exact for accuracies) and the p-value corrected "
                               "for the tasks compared (Benjamini-Hochberg); ✓: corrected p < 0.05\n")


def _names(paths: list[str], docs: list[dict]) -> list[str]:
    names = [doc.get("encoder", {}).get("name") or Path(p).stem for p, doc in zip(paths, docs)]
    if len(set(names)) < len(names):
        names = [f"{n} ({Path(p).parent.name}/{Path(p).name})" for n, p in zip(names, paths)]
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sentence_lab.reporting.compare",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="results JSON files; the first is the reference")
    parser.add_argument("--tasks", default=None, help="task names or groups, e.g. probing or MR,TREC")
    parser.add_argument("--out", default=None, help="also write the table to this Markdown file")
    parser.add_argument("--metric", default=None,
                        help="show this result key instead of the main score where a task has it, e.g. pooled.spearman "
                             "or devacc")
    parser.add_argument("--no-paired", action="store_true",
                        help="leave out the paired tests (they need each file's .items.npz beside it)")
    parser.add_argument("--resamples", type=int, default=RESAMPLES,
                        help="bootstrap draws and permutations of each paired test")
    parser.add_argument("--amnesic-resamples", type=int, default=AMNESIC_RESAMPLES,
                        help="bootstrap draws and permutations of each removed property's paired test (one a "
                             "property and task: fewer than --resamples by default, as there are three times as many)")
    parser.add_argument("--sts-convention", default=None, choices=sorted(CONVENTIONS),
                        help="the STS tasks only, as a paper's convention reports them (simcse: STS12-16 pooled "
                             "Spearman, STS-B and SICK-R by cosine; senteval: SentEval's Pearson columns)")
    args = parser.parse_args(argv)
    try:
        docs = [with_metric(read_results(p), args.metric) for p in args.results]  # any results file
        tasks = resolve_tasks(args.tasks) if args.tasks else None
        if args.sts_convention:
            sts = convention(args.sts_convention)
            docs, tasks = [with_convention(doc, sts) for doc in docs], list(sts.tasks)
    except (ValueError, UnknownTask) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    runs = list(zip(_names(args.results, docs), docs))
    table = compare_table(runs, tasks)
    if not args.no_paired and not args.metric and not args.sts_convention:
        try:
            items = [items_of(p, doc) for p, doc in zip(args.results, docs)]
            rows = [t for t in TASKS if t in docs[0]["results"] and (tasks is None or t in tasks)]
            table += paired_table(runs, items, rows, args.resamples)
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    if not args.metric and not args.sts_convention:
        try:
            removed = amnesic_table(runs, None if args.no_paired else
                                    [items_of(p, doc) for p, doc in zip(args.results, docs)], args.amnesic_resamples)
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        table += f"\n{removed}" if removed else ""
    if args.sts_convention:
        table = f"STS as {sts.reproduces}.\n\n{table}"
    print(table)
    if args.out:
        atomic_write_text(Path(args.out), table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
