"""Records of the GPU check kept in the repository: one JSON file a device run (``docs/gpu/<date>-<card>.json``), and
the results page's "On a GPU" summary table written from the newest of them.

``scripts/gpu_check.py`` writes ``gpu_record.json`` beside its full record (:func:`record_from_check`); committed under
``docs/gpu/``, ``python scripts/gpu_results_table.py`` rewrites the table between the page's markers and
``tests/benchmarks/lib/test_gpu_records.py`` fails while the page shows another record than the newest.
"""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

__all__ = ["REQUIRED", "START", "END", "record_from_check", "file_name", "newest", "table", "rewrite"]

REQUIRED = ("revision", "gpu", "check_wall_s", "suite_s_per_evaluation", "infersent_ratio_2x2048",
            "default_run_mean_12", "default_run_epoch0_mean_12")
START = "<!-- gpu-record:start (scripts/gpu_results_table.py writes this table from docs/gpu/) -->"
END = "<!-- gpu-record:end -->"


def _infersent(rows: list[dict], hidden: int) -> dict[str, Any]:
    """Speed ratio (ours / InferSent) and both dev accuracies of the InferSent part's run at ``hidden`` units whose
    two sides both ran (the run named as the size first)."""
    runs = [r for r in rows if r.get("hidden") == hidden and r.get("speed_ratio")]
    runs.sort(key=lambda r: r.get("run") != str(hidden))
    if not runs:
        return {}
    row = runs[0]
    return {f"infersent_ratio_2x{hidden}": round(row["speed_ratio"], 3),
            f"infersent_dev_acc_2x{hidden}": row["infersent"]["dev_acc"],
            f"ours_dev_acc_2x{hidden}": row["ours"]["dev_acc"]}


def record_from_check(check: dict) -> dict[str, Any]:
    """The keys kept in the repository from a GPU check's record (``gpu_check.json``); a figure the check did not
    measure is None."""
    env, parts = check["environment"], check["parts"]
    run = parts.get("default run", {})
    evaluations = [e for e in run.get("epochs", {}).values() if e.get("eval_seconds")]
    tasks: dict[str, list[float]] = {}
    for e in evaluations:
        for task, seconds in (e.get("task_seconds") or {}).items():
            tasks.setdefault(task, []).append(seconds)
    record: dict[str, Any] = {
        "date": check["started"][:10], "revision": env.get("revision"), "gpu": env.get("gpu"),
        "torch": env.get("torch"), "check_wall_s": round(check["seconds"], 1),
        "suite_s_per_evaluation": (round(statistics.mean(e["eval_seconds"] for e in evaluations), 2)
                                   if evaluations else None),
        "suite_task_seconds": {t: round(statistics.mean(s), 2) for t, s in sorted(tasks.items())},
        "default_run_mean_12": run.get("mean_trained"), "default_run_epoch0_mean_12": run.get("mean_epoch_0"),
        "infersent_ratio_2x2048": None}
    rows = parts.get("infersent", {}).get("rows", [])
    record.update(_infersent(rows, 2048))
    record.update(_infersent(rows, 256))
    return record


def file_name(record: dict) -> str:
    """``<date>-<card>.json``: the card's name in lower case, words joined by dashes."""
    card = re.sub(r"[^a-z0-9]+", "-", str(record.get("gpu") or "no-gpu").lower()).strip("-")
    return f"{record['date']}-{card}.json"


def newest(folder: Path) -> tuple[Path, dict]:
    """The newest record under ``folder`` (by its date, then its name) and its contents."""
    paths = sorted(folder.glob("*.json"), key=lambda p: (json.loads(p.read_text())["date"], p.name))
    if not paths:
        raise FileNotFoundError(f"no GPU record under {folder}: commit a device run's gpu_record.json there")
    return paths[-1], json.loads(paths[-1].read_text())


def _value(value: Any, unit: str = "") -> str:
    if value is None:
        return "not measured"
    return f"{value:.2f}{unit}" if isinstance(value, float) else f"{value}{unit}"


def table(record: dict, source: str) -> str:
    """The summary table of one record, with the goals of issue 62 beside the figures."""
    lines = [f"Newest record: `{source}` ({record['gpu']}, {record['date']}, revision {record['revision']}).", "",
             "| figure | measured | goal |", "|---|---|---|",
             f"| the whole check, seconds | {_value(record['check_wall_s'])} | one call of at most 300 |",
             f"| one evaluation of the default run's suite, seconds | {_value(record['suite_s_per_evaluation'])} | "
             "at most 8 |",
             f"| ours / InferSent's loop at 2 x 2048 | {_value(record['infersent_ratio_2x2048'], 'x')} | "
             "at least 1.0x |"]
    if record.get("infersent_ratio_2x256") is not None:
        lines.append(f"| ours / InferSent's loop at 2 x 256 | {_value(record['infersent_ratio_2x256'], 'x')} | |")
    lines.append(f"| default run, mean of the twelve tasks after training (epoch 0) | "
                 f"{_value(record['default_run_mean_12'])} ({_value(record['default_run_epoch0_mean_12'])}) | "
                 "above epoch 0 |")
    slowest = sorted((record.get("suite_task_seconds") or {}).items(), key=lambda kv: -kv[1])[:5]
    if slowest:
        lines.append("| the suite's slowest tasks, seconds an evaluation | "
                     + ", ".join(f"{t} {s:.2f}" for t, s in slowest) + " | |")
    return "\n".join(lines)


def rewrite(page: str, new_table: str) -> str:
    """``page`` with the text between :data:`START` and :data:`END` replaced by ``new_table``."""
    if START not in page or END not in page:
        raise ValueError("the page has no GPU record markers: put START and END where the table goes")
    head, rest = page.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{new_table}\n{END}{tail}"
