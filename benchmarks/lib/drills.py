"""The drills' table runner (``fault_drills.py``, ``received_file_drills.py``): each drill run, one Markdown row
printed, a crash counted as a failed drill and the rest run."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

Drill = Callable[[Any], tuple[bool | None, str]]


def run_drills(drills: Any, table: list[tuple[str, Drill]], chosen: set[int]) -> list[dict[str, Any]]:
    """The drills of ``table`` numbered in ``chosen`` (all when empty), each on ``drills``: one printed Markdown row
    each (held: yes, **no**, or n/a when it could not run here) and its record. A drill that crashes is a failed
    drill; the rest go on."""
    print("| # | drill | held | seen | s |\n|---|---|---|---|---|")
    rows = []
    for i, (name, drill) in enumerate(table, 1):
        if chosen and i not in chosen:
            continue
        started = time.perf_counter()
        try:
            held, seen = drill(drills)
        except Exception as err:  # noqa: BLE001 - a drill that crashes is a failed drill, the rest go on
            held, seen = False, f"drill crashed: {type(err).__name__}: {err}"
        seconds = time.perf_counter() - started
        mark = "n/a" if held is None else ("yes" if held else "**no**")
        rows.append({"number": i, "drill": name, "held": held, "seen": seen, "seconds": round(seconds, 1)})
        print(f"| {i} | {name} | {mark} | {seen} | {seconds:.0f} |", flush=True)
    ran = [r for r in rows if r["held"] is not None]
    print(f"\n{sum(bool(r['held']) for r in ran)} of {len(ran)} drills held")
    return rows
