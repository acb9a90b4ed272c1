"""A real small filesystem (a tmpfs, root only) for the full-disk tests, and a file that fills it."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_filesystem(parent: Path, size: str = "2m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted in a new folder under ``parent`` for the ``with`` block (the test skips where
    mounting is not allowed)."""
    folder = parent / f"small-{uuid.uuid4().hex[:6]}"
    folder.mkdir(parents=True)
    if os.geteuid() != 0 or shutil.which("mount") is None or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)


def fill(folder: Path, leave_bytes: int = 0) -> Path:
    """A file that takes the free space of ``folder``'s filesystem but ``leave_bytes``."""
    filler = folder / "filler"
    stat = os.statvfs(folder)
    free = stat.f_bavail * stat.f_frsize
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - leave_bytes))
    return filler
