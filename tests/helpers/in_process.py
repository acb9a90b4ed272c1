"""A command line run inside the test's own process, for tests that check what a command writes, prints and exits
with, but not the process boundary itself (signals, kills, DDP ranks, installed commands keep a real process:
``tests/helpers/processes.py``). It saves the seconds a new Python spends importing torch, Lightning and Hydra.

    done = run_main("evaluate.py", ["encoder=bow_glove", "tasks=[MR]"], cwd=tmp_path, env={**os.environ, ...})
    done = run_command([sys.executable, str(ROOT / "train.py"), ...], cwd=tmp_path, env=env)   # a built command
    done.returncode, done.stdout, done.stderr          # as subprocess.run(..., capture_output=True, text=True)

What the command changes in the process is put back afterwards: the environment, the working directory,
``sys.argv`` (and ``sys.orig_argv``), signal handlers, the logging configuration, the warning filters (a new
interpreter's for the call, its warnings printed on stderr), torch's thread count, Hydra's global state and the
garbage collector's frozen objects. What it
prints is read at the file-descriptor level (descriptors 1 and 2 sent to files for the call), so Hydra's log
handlers, ``print`` and C code all land in ``stdout``/``stderr``. An exception that escapes is printed as Python
prints it, exit code 1; ``sys.exit(n)`` gives ``n``. Past its timeout the call is stopped (SIGALRM) and
``subprocess.TimeoutExpired`` raised; what it started is ended with the test (``tests/helpers/processes.py``)."""
from __future__ import annotations

import contextlib
import gc
import io
import logging
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import traceback
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, TextIO

import torch
from hydra.core.global_hydra import GlobalHydra

ROOT = Path(__file__).resolve().parents[2]
_SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP]


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    saved = dict(os.environ)
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _process_state() -> Iterator[None]:
    """Put back what a command line changes in its process."""
    cwd, argv, orig_argv = os.getcwd(), list(sys.argv), list(sys.orig_argv)
    handlers = {s: signal.getsignal(s) for s in _SIGNALS}
    root = logging.getLogger()
    root_handlers, root_level = list(root.handlers), root.level
    loggers = {name: (lg.disabled, lg.level, list(lg.handlers), lg.propagate)
               for name, lg in logging.Logger.manager.loggerDict.items() if isinstance(lg, logging.Logger)}
    threads = torch.get_num_threads()
    frozen = gc.get_freeze_count()
    GlobalHydra.instance().clear()
    try:
        yield
    finally:
        GlobalHydra.instance().clear()
        torch.set_num_threads(threads)
        if not frozen:  # a command freezes what is alive (sentence_lab.cli.imported_objects): the tests' objects too
            gc.unfreeze()
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
        for s, saved_handler in handlers.items():
            signal.signal(s, saved_handler)
        sys.argv[:] = argv
        sys.orig_argv[:] = orig_argv
        os.chdir(cwd)


@contextlib.contextmanager
def _captured() -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    """File descriptors 1 and 2, and ``sys.stdout``/``sys.stderr`` over them, sent to two temporary files."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved_fds, saved_streams = (os.dup(1), os.dup(2)), (sys.stdout, sys.stderr)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        sys.stdout = io.TextIOWrapper(open(1, "wb", closefd=False), encoding="utf-8", errors="replace",
                                      line_buffering=True)
        sys.stderr = io.TextIOWrapper(open(2, "wb", closefd=False), encoding="utf-8", errors="backslashreplace",
                                      line_buffering=True)
        try:
            yield out, err
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            sys.stdout, sys.stderr = saved_streams
            os.dup2(saved_fds[0], 1)
            os.dup2(saved_fds[1], 2)
            for fd in saved_fds:
                os.close(fd)


# A new interpreter's warning filters (``python -W`` unset): what the command warns reaches its stderr as it would there
_FRESH_FILTERS = [("default", DeprecationWarning, "__main__"), ("ignore", DeprecationWarning, ""),
                  ("ignore", PendingDeprecationWarning, ""), ("ignore", ImportWarning, ""),
                  ("ignore", ResourceWarning, "")]


@contextlib.contextmanager
def _fresh_warnings() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.resetwarnings()
        for action, category, module in _FRESH_FILTERS:
            warnings.filterwarnings(action, category=category, module=module, append=True)  # type: ignore[arg-type]
        warnings.showwarning = _show_on_stderr
        yield


def _show_on_stderr(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                    file: TextIO | None = None, line: str | None = None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _read(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read().decode("utf-8", errors="replace")


class _TimedOut(BaseException):
    """Raised in the command by the alarm: not an Exception, so the command's own handlers let it through."""


@contextlib.contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    def ring(signum: int, frame: object) -> None:
        raise _TimedOut

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_main(script: str | Path, args: list[str], *, cwd: Path, env: Mapping[str, str] | None = None,
             timeout: float = 900) -> subprocess.CompletedProcess:
    """``python <script> <args>`` (a file of the repository, e.g. ``evaluate.py``, or its absolute path) run here, in
    ``cwd``, with the environment ``env`` (as ``subprocess.run``'s: the whole environment; None keeps this one's).
    ``OMP_NUM_THREADS`` in it sets torch's threads for the call, as it would in a new process. Past ``timeout``
    seconds the command is stopped and ``subprocess.TimeoutExpired`` raised, as ``subprocess.run`` would."""
    path = ROOT / script
    code = 0
    timed_out = False
    with _captured() as (out, err), _environment(env), _process_state(), _fresh_warnings():
        if env is not None and env.get("OMP_NUM_THREADS"):
            torch.set_num_threads(int(env["OMP_NUM_THREADS"]))
        os.chdir(cwd)
        sys.argv[:] = [str(path), *args]
        sys.orig_argv[:] = [sys.executable, *sys.argv]
        try:
            with _alarm(timeout):
                runpy.run_path(str(path), run_name="__main__")
        except _TimedOut:
            timed_out = True
        except SystemExit as stop:
            if stop.code is None or isinstance(stop.code, int):
                code = stop.code or 0
            else:
                print(stop.code, file=sys.stderr)
                code = 1
        except Exception:  # noqa: BLE001 - what the interpreter would print, and its exit status
            traceback.print_exc()
            code = 1
        stdout, stderr = _read(out), _read(err)
    command = [sys.executable, str(path), *args]
    if timed_out:
        raise subprocess.TimeoutExpired(command, timeout, stdout, stderr)
    return subprocess.CompletedProcess(command, code, stdout, stderr)


def run_command(cmd: list[str], *, cwd: Path, env: Mapping[str, str] | None = None,
                timeout: float = 900) -> subprocess.CompletedProcess:
    """``[sys.executable, <script>, *args]``, a command a test built for a subprocess, run here by ``run_main``."""
    assert cmd[0] == sys.executable and cmd[1].endswith(".py"), cmd[:2]
    return run_main(cmd[1], cmd[2:], cwd=cwd, env=env, timeout=timeout)
