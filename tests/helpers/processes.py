"""Processes a test starts end with the test, whatever happens to it: each command runs as the leader of a process group
of its own, and that whole group (the command, the sweep jobs, DDP ranks and workers it started) is killed when the
command returns, fails or times out, and again when the test ends. Orphans are caught too: the test process is made
a child subreaper (Linux), so a grandchild whose parent died is re-parented here, not to init, and one that is still
alive when its test ends, in a process group other than the test process's own, is killed with its group.

    from tests.helpers import processes
    done = processes.run([sys.executable, "train.py", ...], capture_output=True, text=True, timeout=600)
    proc = processes.start([...], stdout=subprocess.PIPE)   # a Popen, its group ended with the test

A pytest plugin (``pytest_plugins`` in ``tests/conftest.py``): the autouse fixture ``end_leftover_processes`` does the
ending after every test. Processes left in the test process's own group (a multiprocessing resource tracker, a
loky pool kept for the next test) are a library's, and stay."""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

PR_SET_CHILD_SUBREAPER = 36  # prctl(2)
_started: list[subprocess.Popen] = []


def become_subreaper() -> bool:
    """Orphaned descendants of this process are re-parented to it (Linux' PR_SET_CHILD_SUBREAPER); False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def end_group(pgid: int) -> None:
    """SIGKILL every process of group ``pgid``; a group already gone is fine."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def start(args: Sequence[str | os.PathLike[str]] | str, **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen(args, **kwargs)`` as the leader of a new session (its own process group), which is ended
    when the test ends."""
    kwargs["start_new_session"] = True
    proc = subprocess.Popen(args, **kwargs)
    _started.append(proc)
    return proc


def run(args: Sequence[str | os.PathLike[str]] | str, *, input: Any = None, capture_output: bool = False,
        timeout: float | None = None, check: bool = False, **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run`` whose command is a process group of its own: killed whole when the command times out or
    the call is interrupted, and any process it left behind killed when it returns."""
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    proc = start(args, **kwargs)
    try:
        stdout, stderr = proc.communicate(input, timeout=timeout)
    except BaseException:
        end_group(proc.pid)  # not waited for yet: the pid, and so the group, are still the command's
        proc.communicate()
        raise
    finally:
        _end_what_is_left_of(proc.pid)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    if check:
        done.check_returncode()
    return done


def _end_what_is_left_of(pgid: int) -> None:
    """Kill group ``pgid`` of a leader already waited for, if any descendant of this process is still in it (which
    keeps the id from being given to another process; an empty group's id may already be someone else's)."""
    if Path("/proc").is_dir() and any(group == pgid for _, group in descendants(os.getpid())):
        end_group(pgid)


def _parents() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, process group) of every process this one can see, from /proc."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after the command name, which may hold spaces
        table[int(entry.name)] = (int(fields[1]), int(fields[2]))
    return table


def descendants(pid: int) -> Iterator[tuple[int, int]]:
    """(pid, process group) of every living descendant of ``pid``."""
    table = _parents()
    children: dict[int, list[int]] = {}
    for child, (parent, _) in table.items():
        children.setdefault(parent, []).append(child)
    stack = list(children.get(pid, []))
    while stack:
        child = stack.pop()
        yield child, table[child][1]
        stack.extend(children.get(child, []))


def end_leftovers() -> list[int]:
    """End the groups started by ``start``/``run`` whose leader runs still, and every descendant's group that is not
    this process's own; returns the groups ended."""
    own = os.getpgrp()
    # a leader not yet waited for still holds its pid, so its group is the test's; once waited for, its pid may be
    # another process's, and what is left of its group is found among the descendants below
    groups = {proc.pid for proc in _started if proc.poll() is None}
    if Path("/proc").is_dir():
        groups |= {pgid for _, pgid in descendants(os.getpid()) if pgid != own}
    groups.discard(own)
    for pgid in groups:
        end_group(pgid)
    _started.clear()
    if groups and Path("/proc").is_dir():
        _reap({child for child, (parent, pgid) in _parents().items() if parent == os.getpid() and pgid in groups})
    return sorted(groups)


def _reap(children: set[int]) -> None:
    """Wait for these children, killed just now (orphans re-parented here among them), so none stays a zombie."""
    for child in children:
        try:
            os.waitpid(child, 0)
        except ChildProcessError:  # already collected (by its Popen)
            pass


def pytest_configure(config: pytest.Config) -> None:
    become_subreaper()


@pytest.fixture(autouse=True)
def end_leftover_processes() -> Iterator[None]:
    """After every test, passed or not: no process it started outlives it."""
    yield
    end_leftovers()
