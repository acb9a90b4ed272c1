"""A process named so that another process can tell later whether it has ended: ``<host> <pid> <start time>`` (the
start time tells a reused process id from the same process). Only a process on the same host can be known to have
ended; one recorded elsewhere never is. A sweep names itself on each trial it runs (``runs.optuna_sweep``: the next
sweep fails at once a trial whose sweep has ended, the journal storage's only way to find it), and each rank of a
data-parallel run in its sign of life (``runs.rank_liveness``: the ranks left name a lost one)."""
from __future__ import annotations

import os
import socket
from pathlib import Path


def this_process() -> str:
    """``<host> <pid> <start time>`` of this process (the start time in clock ticks since boot; 0 where unknown)."""
    return f"{socket.gethostname()} {os.getpid()} {_start_time(os.getpid())}"


def has_ended(record: str | None) -> bool:
    """Whether the process ``record`` names (``this_process()``'s) is known to have ended: it ran on this host and no
    process of that id and start time lives. One recorded elsewhere, or no record (None, garbled), is not known to."""
    try:
        host, pid, started = str(record).split()
    except ValueError:
        return False
    if host != socket.gethostname():
        return False
    now = _start_time(int(pid))
    return now is None or (int(started) != 0 and now != int(started))


def _start_time(pid: int) -> int | None:
    """A process's start time (``/proc/<pid>/stat``'s 22nd field), 0 where there is no /proc; None when no process of
    that id lives."""
    if not Path("/proc/self/stat").is_file():
        return _alive(pid)
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None
    except OSError:
        return _alive(pid)
    return int(fields[19])  # the 22nd field, counted after the process name's closing parenthesis


def _alive(pid: int) -> int | None:
    """0 when a process of that id lives (its start time unknown), None when none does."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return 0
    return 0
