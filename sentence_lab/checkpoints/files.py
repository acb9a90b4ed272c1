"""A checkpoint file on disk, without Lightning: written whole or not at all (``atomic_torch_save``), and checked before
it is read (``checkpoint_problem``). ``sentence_lab.checkpoints.lightning_io`` hands the writer to Lightning.

Lightning's own save (``lightning.fabric.utilities.cloud_io._atomic_save``) writes through an fsspec
transaction whose temporary file is made by ``tempfile.mkstemp()`` in the system's temporary folder, then
moved over the target with ``shutil.move``. When that folder is on another filesystem the move is a copy
that truncates the good checkpoint first: a full disk leaves a truncated file where a whole one was. Here the
temporary file lies beside the target, is fsynced, and replaces it by a rename in the same directory, so the
previous checkpoint stays whole until the new one is.
"""
from __future__ import annotations

import os
import secrets
import shutil
import zipfile
from pathlib import Path
from typing import Any

import torch

from sentence_lab.stop_signals import signals_held
from sentence_lab.text.files import OutputWriteError, atomic_write


class CheckpointWriteError(OSError):
    """A checkpoint could not be written; the previous file at that path is untouched."""


def _fsync_directory(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some filesystems do not open directories
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_torch_save(obj: Any, path: str | Path) -> None:
    """``torch.save(obj)`` to a temporary file beside ``path``, fsync, then rename over ``path``.
    On failure the temporary file is removed and ``CheckpointWriteError`` names the file and the cause. A stop signal
    that arrives during the write is handled once the write has ended (``signals_held``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with signals_held():  # a stop signal waits for the write to end: cut inside torch.save it reads as an I/O error
        _write(obj, path)
    _fsync_directory(path.parent)


def _write(obj: Any, path: Path) -> None:
    """``torch.save(obj)`` through ``atomic_write`` (a temporary file beside ``path``, fsynced, renamed over it; removed
    on failure), a failure named as the checkpoint's."""
    try:
        atomic_write(path, lambda f: torch.save(obj, f))
    except (OSError, RuntimeError) as err:  # torch.save reports a failed write as RuntimeError
        cause = err.cause if isinstance(err, OutputWriteError) else err
        kept = "the previous one is kept" if path.exists() else "nothing was there before"
        raise CheckpointWriteError(f"could not write checkpoint {path} ({cause}); {kept}: free space or "
                                   "point paths.log_dir elsewhere, then resume with resume=true") from err


def atomic_same_file(source: str | Path, path: str | Path) -> None:
    """``path`` becomes the checkpoint ``source`` (a hard link beside ``path``, renamed over it; where the filesystem
    has no links, a copy through ``atomic_write``): whole or not at all, the file there before kept until then. Either
    name rewritten later (``atomic_torch_save`` renames a new file over it) leaves the other as it was."""
    source, path = Path(source), Path(path)
    with signals_held():
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
        try:
            os.link(source, tmp)
            os.replace(tmp, path)
        except OSError:  # no hard links here (some network and FAT filesystems): a copy
            tmp.unlink(missing_ok=True)
            try:
                with open(source, "rb") as original:
                    atomic_write(path, lambda copy: shutil.copyfileobj(original, copy))
            except OSError as err:
                cause = err.cause if isinstance(err, OutputWriteError) else err
                kept = "the previous one is kept" if path.exists() else "nothing was there before"
                raise CheckpointWriteError(f"could not write checkpoint {path} as {source.name} ({cause}); {kept}: "
                                           f"resume with ckpt_path={source}") from err
    _fsync_directory(path.parent)


def checkpoint_problem(path: str | Path) -> str | None:
    """Why ``path`` is not a readable checkpoint (None when it is one). Cheap: reads the zip directory that
    ``torch.save`` writes at the end of the file, which a truncated or foreign file does not have."""
    path = Path(path)
    if not path.is_file():
        return "no such file"
    if not zipfile.is_zipfile(path):
        return "not a checkpoint (not a file torch.save wrote, or truncated)"
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError) as err:
        return f"unreadable ({err})"
    if not any(name.endswith("/data.pkl") for name in names):
        return "not a checkpoint (a zip file, but not one torch.save wrote)"
    return None
