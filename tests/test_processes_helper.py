"""tests/helpers/processes.py: a command a test starts ends with everything it started, when it times out, when it
returns, and when its parent died and left an orphan (the sweep a killed benchmark left waiting, once)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import processes

# A parent that starts a child in a session of its own (out of its parent's group, as pruned_sweep's sweep is), writes
# the child's pid, then waits or exits.
PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session={new_session})
open(sys.argv[1], "w").write(str(child.pid))
time.sleep(float(sys.argv[2]))
"""

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table from /proc")


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for its parent."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def ended_within_10_s(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def wait_for(path: Path) -> int:
    deadline = time.monotonic() + 60
    while not (path.is_file() and path.read_text()):
        assert time.monotonic() < deadline, f"{path} never written"
        time.sleep(0.05)
    return int(path.read_text())


def parent(tmp_path: Path, seconds: float, new_session: bool) -> list[str]:
    return [sys.executable, "-c", PARENT.format(new_session=new_session), str(tmp_path / "child.pid"), str(seconds)]


@pytest.mark.slow  # waits out a 5 s timeout
def test_a_command_that_times_out_is_killed_with_every_process_it_started(tmp_path):
    with pytest.raises(subprocess.TimeoutExpired):
        processes.run(parent(tmp_path, 600, new_session=False), timeout=5)
    child = wait_for(tmp_path / "child.pid")
    assert ended_within_10_s(child), "the timed-out command's child outlived it"


def test_a_command_that_returns_leaves_no_process_of_its_group(tmp_path):
    done = processes.run(parent(tmp_path, 0, new_session=False), timeout=60)
    assert done.returncode == 0
    child = wait_for(tmp_path / "child.pid")
    assert ended_within_10_s(child)


def test_an_orphan_in_a_session_of_its_own_is_reparented_here_and_ended_with_the_test(tmp_path):
    """The parent exits at once; its child, in another session, is re-parented to this process (the subreaper) and
    ended by the fixture's call, though no helper started it."""
    assert processes.become_subreaper()
    proc = subprocess.Popen(parent(tmp_path, 0, new_session=True))  # not through the helper: only the tree finds it
    proc.wait(timeout=60)
    child = wait_for(tmp_path / "child.pid")
    assert alive(child)
    assert (child, child) in set(processes.descendants(os.getpid()))  # here, as the leader of its own group
    assert child in processes.end_leftovers()
    assert ended_within_10_s(child)


def test_a_process_of_this_processs_own_group_is_left_to_its_owner(tmp_path):
    """What a library keeps in the test process's group (a pool for the next test) is not the test's to end."""
    keeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert keeper.pid not in processes.end_leftovers()
        assert alive(keeper.pid)
    finally:
        keeper.kill()
        keeper.wait()
