"""The small files of a model folder that a checkpoint carries (its config, tokenizer and sentence-transformers
settings: everything but the weights, which are the checkpoint's own), so that a fine-tuned run reloads where the
original folder is not; and the folder they make again, named by their content."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

# configs, tokenizer.json, vocab.txt/merges.txt: text (a SentencePiece .model is binary, and the fast tokenizer that
# every text goes through reads tokenizer.json alone)
CARRIED_SUFFIXES = (".json", ".txt")
MAX_CARRIED_BYTES = 64 << 20
CARRIED_HOME = "SENTENCE_LAB_MODEL_FOLDERS"  # where carried folders are made again (default: a folder of this user's)


def carried_files(folder: Path) -> dict[str, str]:
    """``relative path -> text`` of the folder's configs and tokenizer files, at most one folder deep (the
    sentence-transformers modules' ``1_Pooling/config.json``); README files and weights are left out. A file over
    64 MiB is refused in one line (a checkpoint missing it could not reload)."""
    out: dict[str, str] = {}
    for path in sorted([*folder.glob("*"), *folder.glob("*/*")]):
        if not path.is_file() or path.suffix not in CARRIED_SUFFIXES or path.name.lower().startswith("readme"):
            continue
        if path.stat().st_size > MAX_CARRIED_BYTES:
            raise ValueError(f"{path}: {path.stat().st_size >> 20} MiB, more than a checkpoint carries "
                             f"({MAX_CARRIED_BYTES >> 20} MiB): remove it from the model folder if the model does "
                             "not need it")
        out[path.relative_to(folder).as_posix()] = path.read_text(encoding="utf-8")
    return out


def carried_home() -> Path:
    """``$SENTENCE_LAB_MODEL_FOLDERS``, else a folder of this user's in the temporary directory, made private (0700);
    one that is a link or another user's is refused."""
    given = os.environ.get(CARRIED_HOME)
    home = Path(given) if given else Path(tempfile.gettempdir()) / f"sentence_lab-model-folders-{os.getuid()}"
    if home.is_symlink():
        raise ValueError(f"{home} is a symbolic link: carried model folders are made in a real folder of your own "
                         f"(set {CARRIED_HOME})")
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = home.stat()
    if info.st_uid != os.getuid() or (not given and stat.S_IMODE(info.st_mode) & 0o077):
        raise ValueError(f"{home} belongs to another user or is open to others: set {CARRIED_HOME} to a folder of "
                         "your own")
    return home


def holds(folder: Path, files: dict[str, str]) -> bool:
    """Whether ``folder`` holds exactly ``files`` (no links), as made before."""
    try:
        found = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink()}
        return found == set(files) and all(not (folder / name).is_symlink() and
                                           (folder / name).read_text(encoding="utf-8") == text
                                           for name, text in files.items())
    except (OSError, UnicodeDecodeError):
        return False


def folder_from_files(files: dict[str, str]) -> Path:
    """A folder holding ``files`` (what ``carried_files`` gave), made once under ``carried_home()`` and named by
    their content's hash; written beside it and renamed into place, so a reader never sees half of it, and checked
    against ``files`` when it is there already (remade when it differs). Paths leaving the folder are refused."""
    digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:16]
    home = carried_home()
    target = home / digest
    if target.is_dir() and not target.is_symlink() and holds(target, files):
        return target
    staging = Path(tempfile.mkdtemp(prefix=f"{digest}.", dir=home))
    try:
        for name, text in files.items():
            path = (staging / name).resolve()
            if staging.resolve() not in path.parents:
                raise ValueError(f"the checkpoint's model file {name!r} leaves its folder: refused")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        if target.is_symlink() or target.exists():  # another content under this name: set aside
            aside = home / f"{digest}.stale-{os.getpid()}"
            os.replace(target, aside)
            shutil.rmtree(aside, ignore_errors=True)
        try:
            os.replace(staging, target)
        except OSError:  # another process made it first
            if not holds(target, files):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
