"""Files written whole or not at all, and the one-line error of a write that failed."""
from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

# The exit code of evaluate.py, report.py and the probing generator when an output file could not be written (a full
# disk, a read-only folder); docs/runs.md lists every exit code.
EXIT_WRITE_FAILED = 4
# What only a write fails with (a full disk, a quota, a read-only filesystem), and what a read can fail with too.
WRITE_ONLY_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})
EITHER_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EIO})


class OutputWriteError(OSError):
    """A file could not be written; whatever was at that path before is untouched. Its message is one line naming
    the file, the cause and the fix."""

    def __init__(self, path: Path | str, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause), str(path))
        self.path, self.cause = Path(path), cause
        kept = "the previous file is kept" if self.path.exists() else "nothing was there before"
        self.message = (f"could not write {self.path} ({cause.strerror or cause}); {kept}: free space there or "
                        "write elsewhere, then run the command again")

    def __str__(self) -> str:
        return self.message


def write_failure(err: BaseException, output: Path | str | None = None) -> OutputWriteError | None:
    """``err`` as an ``OutputWriteError`` when it is a write that failed for a reason outside the program: a full
    disk, a quota or a read-only filesystem, or no permission (or an I/O error) on a file under ``output``, the
    command's output folder. The file is ``err``'s own, else ``output``. None for any other error (a file that could
    not be read stays what it is)."""
    if isinstance(err, OutputWriteError):
        return err
    if not isinstance(err, OSError):
        return None
    under_output = output is not None and err.filename is not None and \
        Path(str(err.filename)).resolve().is_relative_to(Path(output).resolve())
    if err.errno in WRITE_ONLY_ERRNOS or (err.errno in EITHER_ERRNOS and under_output):
        return OutputWriteError(err.filename or output or "an output file", err)
    return None


def create_temporary_beside(path: Path | str, suffix: str = ".tmp") -> tuple[int, Path]:
    """A new file (its descriptor, open for writing, and its path) in ``path``'s folder under an unpredictable name
    ending in ``suffix``: created exclusively, never through a link, with the mode of an ordinary file (0o666 less
    the umask, which the kernel applies: the process umask is never changed)."""
    path = Path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}{suffix}")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue


def atomic_write_text(path: Path | str, text: str) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over ``path``; a failed write raises
    ``OutputWriteError`` naming ``path`` and leaves the file there as it was."""
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def atomic_write(path: Path | str, fill: Callable[[BinaryIO], object]) -> None:
    """``fill(file)`` writes the content into a temporary file in the same folder (binary), then fsync and rename over
    ``path``, as :func:`atomic_write_text` does (e.g. ``numpy.savez`` into it)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = create_temporary_beside(path)
    except OSError as err:
        raise OutputWriteError(path, err) from err
    try:
        with os.fdopen(fd, "wb") as f:
            fill(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(err, OSError) and not isinstance(err, OutputWriteError):
            raise OutputWriteError(path, err) from err
        raise
