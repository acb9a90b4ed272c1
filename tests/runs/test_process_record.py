"""A process named for later: one on this host that has ended is known to have ended, one elsewhere or unnamed is
not, and a process id reused by another process does not pass for the recorded one."""
from __future__ import annotations

import os
import socket
import subprocess
import sys

from sentence_lab.runs.process_record import has_ended, this_process


def _ended() -> str:
    done = subprocess.run([sys.executable, "-c", "from sentence_lab.runs.process_record import this_process; "
                           "print(this_process())"], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})
    return done.stdout.strip()


def test_this_process_lives_and_an_ended_one_is_gone():
    assert not has_ended(this_process())
    ended = _ended()
    assert ended.split()[0] == socket.gethostname() and has_ended(ended)


def test_a_reused_process_id_is_not_the_recorded_process():
    host, pid, started = this_process().split()
    if started == "0":  # no /proc: the start time is not known here
        return
    assert has_ended(f"{host} {pid} {int(started) + 1}")


def test_another_host_or_no_record_is_not_known_to_have_ended():
    _, pid, started = this_process().split()
    assert not has_ended(f"another-node 999999 {started}")
    assert not has_ended(None) and not has_ended("garbled")
