"""The small files of a model folder that a checkpoint carries (its config, tokenizer and sentence-transformers
settings: everything but the weights, which are the checkpoint's own), so that a fine-tuned run reloads where the
original folder is not; and the folder they make again, named by their content."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

CARRIED_SUFFIXES = (".json", ".txt", ".model")  # configs, vocab.txt, a SentencePiece model
MAX_CARRIED_BYTES = 16 << 20
CARRIED_HOME = "SENTENCE_LAB_MODEL_FOLDERS"  # where carried folders are made again (default: the temp directory)


def carried_files(folder: Path) -> dict[str, str]:
    """``relative path -> text`` of the folder's configs and tokenizer files, at most one folder deep (the
    sentence-transformers modules' ``1_Pooling/config.json``); README files and weights are left out."""
    out: dict[str, str] = {}
    for path in sorted([*folder.glob("*"), *folder.glob("*/*")]):
        if path.is_file() and path.suffix in CARRIED_SUFFIXES and not path.name.lower().startswith("readme") \
                and path.stat().st_size <= MAX_CARRIED_BYTES:
            out[path.relative_to(folder).as_posix()] = path.read_text(encoding="utf-8")
    return out


def folder_from_files(files: dict[str, str]) -> Path:
    """A folder holding ``files`` (what ``carried_files`` gave), made once under ``$SENTENCE_LAB_MODEL_FOLDERS`` (or
    the temp directory) and named by their content's hash; written beside it and renamed into place, so a reader
    never sees half of it. Paths leaving the folder are refused."""
    digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:16]
    home = Path(os.environ.get(CARRIED_HOME) or Path(tempfile.gettempdir()) / "sentence_lab-model-folders")
    target = home / digest
    if target.is_dir():
        return target
    home.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{digest}.", dir=home))
    try:
        for name, text in files.items():
            path = (staging / name).resolve()
            if staging.resolve() not in path.parents:
                raise ValueError(f"the checkpoint's model file {name!r} leaves its folder: refused")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        try:
            os.replace(staging, target)
        except OSError:  # another process made it first
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
