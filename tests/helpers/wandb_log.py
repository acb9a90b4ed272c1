"""The records of an offline W&B run's ``run-<id>.wandb`` file, for tests that read back what the logger wrote.

wandb 0.31 writes the file from its Go core and ships no Python reader. Its layout is LevelDB's log format after a
7-byte header (``:W&B``, the magic 0xBEE1, a version byte): 32 KiB blocks of chunks, each chunk a 4-byte CRC, a
2-byte little-endian length and a type (1 full, 2 first, 3 middle, 4 last); a block's tail shorter than a chunk
header is padding. Each reassembled record is a ``wandb_internal_pb2.Record``."""
from __future__ import annotations

import json
import struct
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

BLOCK = 32 * 1024
HEADER = 7


def records(path: Path) -> Iterator[bytes]:
    data = Path(path).read_bytes()
    if data[:4] != b":W&B":
        raise ValueError(f"{path}: not a W&B run log")
    pos, pending = HEADER, b""
    while pos + HEADER <= len(data):
        room = BLOCK - pos % BLOCK
        if room < HEADER:  # the block's padding
            pos += room
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + HEADER])
        chunk = data[pos + HEADER : pos + HEADER + length]
        pos += HEADER + length
        if kind == 0 and length == 0:
            break
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            yield pending
            pending = b""


def _parsed(path: Path) -> Iterator:
    """Each record of a run log as a ``wandb_internal_pb2.Record``, with its type's name."""
    from wandb.proto import wandb_internal_pb2

    for raw in records(path):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(raw)
        yield record.WhichOneof("record_type") or "?", record


def _items(path: Path, kind: str) -> list[dict]:
    """Each record of one type (``history``: a ``wandb.log`` call; ``config``: a config update) as ``{key: value}``."""
    rows = []
    for found, record in _parsed(path):
        if found == kind:
            items = record.history.item if kind == "history" else record.config.update
            rows.append({item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in items})
    return rows


def record_kinds(path: Path) -> dict[str, int]:
    """How many records of each type the log holds (what a failing test shows)."""
    return dict(Counter(kind for kind, _ in _parsed(path)))


def history(path: Path) -> list[dict]:
    """The history rows of a run log, in order."""
    return _items(path, "history")


def config(path: Path) -> dict:
    """The run's config (hyper-parameters), all updates merged."""
    merged: dict = {}
    for update in _items(path, "config"):
        merged.update(update)
    return merged
