"""A command line run inside the test's own process, for tests that check what a command writes, prints and exits
with, but not the process boundary itself (signals, kills, DDP ranks, installed commands keep a real process:
``tests/helpers/processes.py``). It saves the seconds a new Python spends importing torch, Lightning and Hydra.

    done = run_main("evaluate.py", ["encoder=bow_glove", "tasks=[MR]"], cwd=tmp_path, env={"SENTENCE_DATA": ...})
    done.returncode, done.stdout, done.stderr          # as subprocess.run(..., capture_output=True, text=True)

What the command changes in the process is put back afterwards: the environment, the working directory,
``sys.argv``, signal handlers, the logging configuration, torch's thread count and Hydra's global state. What it
prints is read at the file-descriptor level (pytest's ``capfd``), so Hydra's log handlers and ``print`` both land
in ``stdout``/``stderr``. An exception that escapes is printed as Python prints it, exit code 1; ``sys.exit(n)``
gives ``n``."""
from __future__ import annotations

import contextlib
import logging
import os
import runpy
import signal
import subprocess
import sys
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import torch
from hydra.core.global_hydra import GlobalHydra

ROOT = Path(__file__).resolve().parents[2]
_SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP]


@contextlib.contextmanager
def _environment(env: Mapping[str, str | None]) -> Iterator[None]:
    saved = dict(os.environ)
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _process_state() -> Iterator[None]:
    """Put back what a command line changes in its process."""
    cwd, argv = os.getcwd(), list(sys.argv)
    handlers = {s: signal.getsignal(s) for s in _SIGNALS}
    root = logging.getLogger()
    root_handlers, root_level = list(root.handlers), root.level
    loggers = {name: (lg.disabled, lg.level, list(lg.handlers), lg.propagate)
               for name, lg in logging.Logger.manager.loggerDict.items() if isinstance(lg, logging.Logger)}
    threads = torch.get_num_threads()
    GlobalHydra.instance().clear()
    try:
        yield
    finally:
        GlobalHydra.instance().clear()
        torch.set_num_threads(threads)
        for name, lg in list(logging.Logger.manager.loggerDict.items()):
            if not isinstance(lg, logging.Logger):
                continue
            if name in loggers:
                lg.disabled, level, lg.handlers[:], lg.propagate = loggers[name]
                lg.setLevel(level)
            else:
                lg.handlers.clear()
        for handler in root.handlers:
            if handler not in root_handlers:
                handler.close()
        root.handlers[:] = root_handlers
        root.setLevel(root_level)
        for s, handler in handlers.items():
            signal.signal(s, handler)
        sys.argv[:] = argv
        os.chdir(cwd)


def run_main(script: str, args: list[str], *, capfd: pytest.CaptureFixture[str], cwd: Path,
             env: Mapping[str, str | None] | None = None) -> subprocess.CompletedProcess:
    """``python <script> <args>`` (a file of the repository, e.g. ``evaluate.py``) run here, in ``cwd``, with the
    environment changed by ``env`` (a value of None removes the variable)."""
    path = ROOT / script
    capfd.readouterr()  # what the test printed before is not the command's
    code = 0
    with _environment(env or {}), _process_state():
        os.chdir(cwd)
        sys.argv[:] = [str(path), *args]
        try:
            runpy.run_path(str(path), run_name="__main__")
        except SystemExit as stop:
            if stop.code is None or isinstance(stop.code, int):
                code = stop.code or 0
            else:
                print(stop.code, file=sys.stderr)
                code = 1
        except Exception:  # noqa: BLE001 - what the interpreter would print, and its exit status
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
    out, err = capfd.readouterr()
    return subprocess.CompletedProcess([sys.executable, str(path), *args], code, out, err)
