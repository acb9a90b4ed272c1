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
    from text.processes import ordered_map

    return list(ordered_map(square, range(n), workers=2))
