"""The points a run logged, read back from its files: each scalar's steps in TensorBoard's event files and in the CSV
logger's ``metrics.csv`` (every point, as any reader of the files meets them: no restart marker applied)."""
from __future__ import annotations

import csv
from pathlib import Path

from tensorboard.backend.event_processing.event_file_loader import EventFileLoader


def tensorboard_steps(run: Path) -> dict[str, list[int]]:
    """Every scalar's logged steps over all of the run's event files (what any reader of the files meets)."""
    steps: dict[str, list[int]] = {}
    for events in sorted((run / "tensorboard").glob("events.out.tfevents*")):
        for event in EventFileLoader(str(events)).Load():
            for value in event.summary.value:
                steps.setdefault(value.tag, []).append(int(event.step))
    return steps


def csv_steps(run: Path) -> dict[str, list[int]]:
    """Every column's steps with a value in the CSV logger's metrics.csv."""
    steps: dict[str, list[int]] = {}
    with open(run / "csv" / "metrics.csv", newline="") as f:
        for row in csv.DictReader(f):
            for key, value in row.items():
                if key != "step" and value not in ("", None):
                    steps.setdefault(key, []).append(int(row["step"]))
    return steps
