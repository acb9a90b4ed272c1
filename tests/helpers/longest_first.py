"""Longest tests first, so that the two workers of ``pytest -n 2`` end together: under pytest-xdist each worker
orders its collection by the seconds each test took last time (``tests/durations.json``, setup + call + teardown),
longest first, and pytest.ini's ``--maxschedchunk=1`` hands the tests out one by one in that order (the longest
processing time first rule: the run ends with short tests on both workers, not one long test on one).

Tests that share a module-scoped fixture stay together, ordered by their longest, so the fixture is made once per
worker. A test the file does not know counts as ``UNKNOWN_S``. Without xdist (``-n 0``) the order is pytest's own.

Refresh the file after a change that moves the durations (a run of the whole suite, both of CI's parts, merges into
it): ``python -m pytest -n 2 --record-durations``."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).resolve().parents[1] / "durations.json"
UNKNOWN_S = 2.0


def read_durations(path: Path = DURATIONS) -> dict[str, float]:
    if not path.is_file():
        return {}
    return {str(k): float(v) for k, v in json.loads(path.read_text(encoding="utf-8")).items()}


def longest_first(items: list[pytest.Item], seconds: dict[str, float]) -> list[pytest.Item]:
    """``items`` reordered, longest first; the items of a module that has a module-scoped fixture kept together
    (their order among themselves kept) and placed by their longest."""
    groups: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        groups[_group(item)].append(item)
    blocks = []
    for key, members in groups.items():
        if key.startswith("module:"):
            blocks.append(members)
        else:
            blocks.extend([member] for member in members)
    blocks.sort(key=lambda block: max(seconds.get(i.nodeid, UNKNOWN_S) for i in block), reverse=True)
    return [item for block in blocks for item in block]


def _group(item: pytest.Item) -> str:
    info = getattr(item, "_fixtureinfo", None)
    definitions = info.name2fixturedefs.values() if info is not None else ()
    if any(d and d[-1].scope == "module" for d in definitions):
        return f"module:{item.nodeid.split('::')[0]}"
    return f"item:{item.nodeid}"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--record-durations", action="store_true",
                     help=f"merge this run's test durations into {DURATIONS.relative_to(DURATIONS.parents[1])}")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: every worker orders alike, as xdist requires
        items[:] = longest_first(items, read_durations())


class _Recorder:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        merged = read_durations() | {k: round(v, 2) for k, v in self.seconds.items()}
        DURATIONS.write_text(json.dumps(dict(sorted(merged.items())), indent=0) + "\n", encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--record-durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Recorder(), "longest-first-recorder")
