"""Files written whole or not at all; a write that fails is one error naming the file and the cause."""
from __future__ import annotations

import errno
import os
import stat

import pytest

from sentence_lab.text.files import OutputWriteError, atomic_write_text, write_failure
from tests.helpers.small_filesystem import fill, small_filesystem


def test_a_full_disk_keeps_the_previous_file_and_names_it(tmp_path):
    with small_filesystem(tmp_path, "1m") as small:
        target = small / "results.json"
        atomic_write_text(target, "old\n")
        fill(small, leave_bytes=0)
        with pytest.raises(OutputWriteError) as raised:
            atomic_write_text(target, "x" * 200_000)
        assert target.read_text() == "old\n"
        assert sorted(os.listdir(small)) == ["filler", "results.json"]  # no temporary file left
    err = raised.value
    assert err.errno == errno.ENOSPC and str(err).startswith(f"could not write {target} (No space left on device); "
                                                             "the previous file is kept")
    assert "\n" not in str(err)


def test_write_failure_tells_a_write_fault_from_other_errors(tmp_path):
    full = write_failure(OSError(errno.ENOSPC, "No space left on device", "/x/report.md"), output=tmp_path)
    assert isinstance(full, OutputWriteError) and "could not write /x/report.md (No space left" in str(full)
    unnamed = write_failure(OSError(errno.EROFS, "Read-only file system"), output=tmp_path)
    assert f"could not write {tmp_path} (Read-only file system)" in str(unnamed)
    denied_here = write_failure(OSError(errno.EACCES, "Permission denied", str(tmp_path / "report.md")), tmp_path)
    assert isinstance(denied_here, OutputWriteError)
    # a file that could not be read (an input elsewhere) is not a write failure
    assert write_failure(OSError(errno.EACCES, "Permission denied", "/data/corpus/a.txt"), output=tmp_path) is None
    assert write_failure(OSError(errno.EIO, "Input/output error", "/data/corpus/a.txt"), output=tmp_path) is None
    assert write_failure(OSError(errno.ENOENT, "No such file or directory")) is None
    assert write_failure(ValueError("x")) is None


def test_a_written_file_has_an_ordinary_mode_and_the_umask_is_never_changed(tmp_path, monkeypatch):
    def no_umask(mask):
        raise AssertionError("os.umask was called during a write")

    umask = os.umask
    previous = umask(0o027)
    try:
        monkeypatch.setattr(os, "umask", no_umask)
        target = tmp_path / "results.json"
        atomic_write_text(target, "new\n")
        atomic_write_text(target, "newer\n")  # over an existing file too
    finally:
        umask(previous)
    assert target.read_text() == "newer\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~0o027
    assert os.listdir(tmp_path) == ["results.json"]
