"""Which sweep process runs a trial, so that the next sweep can tell a dead one from a live one without waiting. The
sweep that asks Optuna for a trial records itself on it (``sweep_process``: host, process id and the process's start
time, which tells a reused id from the same process); a sweep that finds a trial running whose recorded process is on
its own host and has ended fails it and runs its parameters again at once. This is the journal storage's only way
to find a dead sweep (it keeps no heartbeats); on a database it comes before the heartbeat's grace period."""
from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

OWNER = "sweep_process"


def this_process() -> str:
    """``<host> <pid> <start time>`` of this process (the start time in clock ticks since boot; 0 where unknown)."""
    return f"{socket.gethostname()} {os.getpid()} {_start_time(os.getpid())}"


def owner_gone(attrs: dict[str, Any]) -> bool:
    """Whether the process recorded in a trial's user attributes is known to have ended: it ran on this host and no
    process of that id and start time lives. A trial recorded elsewhere, or not recorded at all, is not known to be."""
    try:
        host, pid, started = str(attrs[OWNER]).split()
    except (KeyError, ValueError):
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
