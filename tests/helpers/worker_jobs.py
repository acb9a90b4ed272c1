"""Jobs for worker-process tests: importable by name, as a spawned worker needs."""
from __future__ import annotations

import os


def square(x: int) -> int:
    return x * x


def die(x: int) -> int:
    """A worker killed mid-job, as the out-of-memory killer does."""
    os._exit(9)


def squares_in_workers(n: int) -> list[int]:
    """``ordered_map`` run inside whatever process calls this (a joblib worker in the test)."""
    from sentence_lab.text.processes import ordered_map

    return list(ordered_map(square, range(n), workers=2))


def append_failures(sweep: str, writer: int) -> None:
    """200 long lines appended to a sweep's failed_jobs.jsonl, as one of several processes doing so at once."""
    from pathlib import Path

    from sentence_lab.runs.sweeps import record_failed_job

    for job in range(200):
        record_failed_job(Path(sweep), job, [f"writer={writer}", "x" * 300], "error " * 20, None)


def slow_encode(sentences: list[str]):
    """A toy encoder taking 0.3 s a batch (``encoder=callable``): an evaluation long enough to be stopped."""
    import time

    from tests.helpers.hash_encoder import HashEncoder

    time.sleep(0.3)
    return HashEncoder().encode(list(sentences))
