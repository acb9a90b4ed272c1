"""The report's tables: runs x tasks (``report.md``, ``report.csv``), and the STS rows under a paper's convention."""
from __future__ import annotations

import csv
import io
from pathlib import Path

from sentence_lab.reporting.amnesic import amnesic_table
from sentence_lab.reporting.compare import with_convention
from sentence_lab.reporting.floors import floors_table
from sentence_lab.reporting.runs import SETTINGS, Run
from sentence_lab.tasks.sts_conventions import StsConvention
from sentence_lab.text.files import atomic_write_text


def task_names(runs: list[Run]) -> list[str]:
    """Every task any run scored, the probing tasks first, then transfer, relatedness and similarity."""
    seen: dict[str, str] = {}
    for run in runs:
        seen.update(run.families)
    order = {"probing": 0, "transfer": 1, "relatedness": 2, "similarity": 3}
    return sorted(seen, key=lambda t: (order.get(seen[t], 9), t))


def table_rows(runs: list[Run]) -> tuple[list[str], list[list]]:
    tasks = task_names(runs)
    tests = sorted({k for run in runs for k in run.tests})
    header = ["run", "objective", "encoder", "data", *SETTINGS, "epochs"]
    for task in tasks:
        header += [f"{task} final", f"{task} best", f"{task} best epoch"]
    header += tests
    rows = []
    for run in runs:
        epochs = max((max(c) for c in run.curves.values()), default=None)
        row = [run.name, run.choices.get("objective"), run.choices.get("encoder"), run.choices.get("data"),
               *(run.settings.get(k) for k in SETTINGS), epochs]
        for task in tasks:
            best = run.best(task)
            row += [run.final(task), best[0] if best else None, best[1] if best else None]
        row += [run.tests.get(k) for k in tests]
        rows.append(row)
    return header, rows


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) <= 1.0 else f"{value:.2f}"
    return str(value)


def write_table(runs: list[Run], out: Path) -> None:
    header, rows = table_rows(runs)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows([[_cell(v) for v in row] for row in rows])
    atomic_write_text(out / "report.csv", buffer.getvalue())
    lines = [f"# Report: {len(runs)} run(s) under `{out}`", "",
             "Final and best score per task (accuracy in %, correlations in [-1, 1]) from the evaluation suite "
             "of each run (`eval/epoch_NNN.json`; epoch 0 = before training).", ""]
    short = [h for h in header if not h.endswith(" best epoch")]
    keep = [header.index(h) for h in short]
    lines.append("| " + " | ".join(short) + " |")
    lines.append("|" + "---|" * len(short))
    for row in rows:
        lines.append("| " + " | ".join(_cell(row[i]) for i in keep) + " |")
    preset = [run for run in runs if run.preset]
    if preset:
        lines += ["", "Scored by a fast curve preset of the per-epoch suite, not SentEval's protocol (fewer examples "
                  "and tasks; its agreement with the full protocol: docs/curves.md): "
                  + ", ".join(f"{run.name} ({run.preset})" for run in preset) + "."]
    probed = [run for run in runs if run.probes]
    if probed:
        tasks = [t for t in task_names(runs) if any(t in run.probes for run in probed)]
        lines += ["", "Probes of the last epoch: the probe that scored each task and what it chose on dev; selectivity "
                  "(accuracy minus the control task's) and online codelength where measured.", "",
                  "| run | " + " | ".join(tasks) + " |", "|" + "---|" * (len(tasks) + 1)]
        lines += [f"| {run.name} | " + " | ".join(run.probes.get(t, "") for t in tasks) + " |" for run in probed]
    floors = floors_table([(run.name, run.last_results) for run in runs], task_names(runs))
    if floors:
        lines += ["", "The probing sets' floors (each run's last epoch; one row per set when runs scored different "
                  "ones):", "", floors.rstrip("\n")]
    removed = amnesic_table([(run.name, run.last_results) for run in runs])
    if removed:
        lines += ["", "Properties removed from the vectors at the last epoch (`evaluation.amnesic`):", "",
                  removed.rstrip("\n")]
    layered = layer_table(runs)
    if layered:
        lines += ["", layered]
    sides = side_table(runs)
    if sides:
        lines += ["", sides]
    figures = [p.name for p in (out / "probing_curves.png", out / "seed_curves.png", out / "probing_layers.png",
                                out / "probing_measures.png", out / "correlations.png", out / "training_loss.png")
               if p.is_file()]
    if figures:
        lines += ["", "Figures: " + ", ".join(f"[{f}]({f})" for f in figures)]
    atomic_write_text(out / "report.md", "\n".join(lines) + "\n")


def peak_depth(scores: dict[int, float]) -> tuple[int, float]:
    """The layer with the highest score (the lowest such layer on a tie) and its place in the depth: 0 for layer 0,
    1 for the top."""
    top = max(scores)
    best = max(sorted(scores), key=lambda k: scores[k])
    return best, best / top if top else 0.0


def layer_table(runs: list[Run]) -> str:
    """Per run that scored layers, its last evaluated epoch: task x layer, the best layer of each task in bold, and
    where in the depth it peaks (0 = the word vectors, 1 = the top), as Jawahar et al. 2019 read BERT's layers."""
    parts = []
    for run in [r for r in runs if r.layers]:
        depth = max(max(layers) for layers in run.layers.values())
        lines = [f"Scores per layer, {run.name} (last epoch evaluated; layer 0 = pooled word vectors; bold: the "
                 "task's best layer; peak = its place in the depth, 0 bottom, 1 top).", "",
                 "| task | " + " | ".join(f"layer {k}" for k in range(depth + 1)) + " | peak |",
                 "|---" * (depth + 3) + "|"]
        for task in task_names([run]):
            if task not in run.layers:
                continue
            final = {k: scores[max(scores)] for k, scores in run.layers[task].items() if scores}
            best, share = peak_depth(final)
            cells = [("**" + _cell(final[k]) + "**" if k == best else _cell(final[k])) if k in final else ""
                     for k in range(depth + 1)]
            lines.append(f"| {task} | " + " | ".join(cells) + f" | {share:.2f} |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def side_table(runs: list[Run]) -> str:
    """Per run with a second language (J_bi's), per language: each task's score at epoch 0 and at the last epoch
    evaluated; translation retrieval's is an error rate (lower is better), beside what its baselines miss."""
    parts = []
    for run in [r for r in runs if r.sides]:
        for language, tasks in run.sides.items():
            lines = [f"Second language `{language}`, {run.name}: each task at epoch 0 and at the last epoch evaluated "
                     "(Tatoeba: retrieval's margin error, both directions' mean, lower is better).", "",
                     "| task | epoch 0 | last | epoch |", "|---|---|---|---|"]
            for task, scores in tasks.items():
                last = max(scores)
                lines.append(f"| {task} | {_cell(scores.get(0))} | {_cell(scores[last])} | {last} |")
            for name, error in run.side_baselines.get(language, {}).items():
                lines.append(f"| Tatoeba baseline: {name.replace('_', ' ')} | {_cell(error)} | | |")
            parts.append("\n".join(lines))
    return "\n\n".join(parts)


def sts_table(runs: list[Run], sts: StsConvention) -> str:
    """The STS rows of each run's last evaluated epoch as ``sts`` reports them (x100), with their mean; a cell is
    empty where the run did not evaluate the task (``simcse`` reads the cosine tasks: tasks=sts_cosine)."""
    docs = [with_convention(run.last_results, sts) for run in runs]
    lines = [f"STS as {sts.reproduces} (x100, last epoch evaluated).", "",
             "| task | " + " | ".join(run.name for run in runs) + " |", "|---" * (len(runs) + 1) + "|"]
    values: dict[str, list[float]] = {run.name: [] for run in runs}
    for task in sts.tasks:
        cells = []
        for run, doc in zip(runs, docs):
            score = doc["results"].get(task, {}).get("main_score")
            cells.append("" if score is None else f"{100 * score:.2f}")
            if score is not None:
                values[run.name].append(100 * score)
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    complete = [len(values[run.name]) == len(sts.tasks) for run in runs]
    lines.append("| mean | " + " | ".join(f"{sum(values[r.name]) / len(values[r.name]):.2f}" if ok else ""
                                         for r, ok in zip(runs, complete)) + " |")
    return "\n".join(lines) + "\n"
