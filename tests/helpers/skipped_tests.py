"""A pytest plugin: with ``SENTENCE_LAB_SKIPPED_TESTS=<file>`` set, the node ids of the tests that skipped are
written to that file, one a line (pytest's ``@<file>`` argument runs exactly them).

``.ci/run`` runs the README's test command as a newcomer would (``requirements.txt`` alone, no task data), then
runs the tests that skipped there in a second environment that has the optional extras and the data: every test
runs somewhere, and the newcomer's command is the one CI proves green."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ENV = "SENTENCE_LAB_SKIPPED_TESTS"
_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and report.nodeid not in _skipped:
        _skipped.append(report.nodeid)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module skipped whole while collected (an optional extra absent): the module's path."""
    if report.skipped and report.nodeid and report.nodeid not in _skipped:
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Written by the session that saw every report: pytest's, or with pytest-xdist (``-n``) its controller, which
    the workers forward their reports to (a worker's list holds its own tests only)."""
    target = os.environ.get(ENV)
    if target and not hasattr(session.config, "workerinput"):
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        Path(target).write_text("".join(f"{nodeid}\n" for nodeid in _skipped), encoding="utf-8")
