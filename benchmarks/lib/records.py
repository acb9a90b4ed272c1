"""The ``--smoke`` / ``--output`` options every benchmark takes and the JSON record of a run: what it measured, with
the machine, Python and library versions, git revision and the exact command.

    from lib import records

    parser = argparse.ArgumentParser(...)
    records.add_options(parser, "what the smoke run does")
    args = parser.parse_args()
    run = records.start("eval_speed", args, ROOT)
    ...
    run.write({"tasks": rows})          # prints and returns the record's path

``tests/benchmarks/test_smoke.py`` runs each benchmark's ``--smoke`` and reads its record.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import sys
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from sentence_lab.evaluation.results import git_revision, library_versions

RECORD_KEYS = ("benchmark", "command", "cwd", "smoke", "started", "seconds", "machine", "python", "versions",
               "git_revision", "results")


def add_options(parser: argparse.ArgumentParser, smoke: str = "a tiny input made here, end to end in seconds") -> None:
    """``--smoke`` (what the smoke run does: ``smoke``) and ``--output`` (the JSON record)."""
    parser.add_argument("--smoke", action="store_true", help=f"smoke run: {smoke}")
    parser.add_argument("--output", type=Path, default=None,
                        help="the JSON record of this run (default: logs/benchmarks/<benchmark>/<time>.json)")


def machine() -> dict[str, Any]:
    """Platform, processor, CPU count (and the CPUs this process may use), load average."""
    processor = platform.processor()
    try:  # platform.processor() is empty on most Linux systems: the model name of /proc/cpuinfo instead
        processor = processor or next(line.split(":", 1)[1].strip() for line in
                                      Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    out: dict[str, Any] = {"platform": platform.platform(), "machine": platform.machine(), "processor": processor,
           "cpu_count": os.cpu_count()}
    if hasattr(os, "sched_getaffinity"):
        out["cpus_usable"] = len(os.sched_getaffinity(0))
    if hasattr(os, "getloadavg"):
        out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return out


def versions(*extra: str) -> dict[str, str]:
    """:func:`library_versions` and those of ``extra`` distributions that are installed."""
    out = library_versions()
    for name in extra:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


@dataclass
class Run:
    """One run of a benchmark: where its record goes and what it records besides its figures."""

    name: str
    output: Path
    smoke: bool
    started: str = field(default_factory=lambda: datetime.datetime.now().astimezone().isoformat(timespec="seconds"))
    clock: float = field(default_factory=time.perf_counter)

    def record(self, results: Any, libraries: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
        return {"benchmark": self.name, "command": shlex.join(getattr(sys, "orig_argv", [sys.executable, *sys.argv])),
                "cwd": os.getcwd(), "smoke": self.smoke, "started": self.started,
                "seconds": round(time.perf_counter() - self.clock, 2), "machine": machine(),
                "python": platform.python_version(), "versions": versions(*libraries),
                "git_revision": git_revision(), **extra, "results": results}

    def write(self, results: Any, libraries: tuple[str, ...] = (), **extra: Any) -> Path:
        """Write the record (``results``: what was measured, JSON-able; ``libraries``: more distributions whose
        versions matter; ``extra``: more top-level fields) and print its path."""
        self.output.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.record(results, libraries, **extra), indent=1, default=str)
        tmp = self.output.with_name(self.output.name + ".part")
        tmp.write_text(text + "\n")
        tmp.replace(self.output)
        print(f"record: {self.output}", flush=True)
        return self.output


def start(name: str, args: argparse.Namespace, root: Path) -> Run:
    """A run of benchmark ``name`` with the options of :func:`add_options`; the default record is
    ``<root>/logs/benchmarks/<name>/<time>[-smoke].json``."""
    smoke = bool(getattr(args, "smoke", False))
    output = getattr(args, "output", None)
    if output is None:
        stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
        output = Path(root) / "logs" / "benchmarks" / name / f"{stamp}{'-smoke' if smoke else ''}.json"
    return Run(name, Path(output), smoke)
