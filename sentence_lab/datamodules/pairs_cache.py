"""The tokenised-pairs cache of ``PairsDataModule``: one ``.npz`` of plain arrays, read with ``allow_pickle=False``
(a cache folder copied from someone else is data, docs/trust.md)."""
from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from sentence_lab.text.files import create_temporary_beside

# 2: a .npz of plain arrays, read with allow_pickle=False (1 was a pickle, whose .pkl files are never read again)
CACHE_VERSION = 2
# What a cache file that cannot be read raises (truncated, not a zip, arrays missing or of the wrong kind): it is
# tokenised again.
CACHE_READ_ERRORS = (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile)
_SEPARATOR = "\n"

Split = tuple[list[list[str]], list[list[str]], list[str | None]]


def _pack_side(sentences: list[list[str]], where: str) -> tuple[np.ndarray, np.ndarray]:
    """Token lists as (the UTF-8 bytes of every token joined by a newline, int32 tokens per sentence)."""
    counts = np.fromiter((len(tokens) for tokens in sentences), dtype=np.int32, count=len(sentences))
    total = int(counts.sum())
    text = _SEPARATOR.join([token for tokens in sentences for token in tokens])
    if total and text.count(_SEPARATOR) != total - 1:
        raise ValueError(f"a token of {where} holds a newline, which the cache separates tokens with")
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8), counts


def _unpack_side(data: np.ndarray, counts: np.ndarray, where: str) -> list[list[str]]:
    """The token lists that ``_pack_side`` packed."""
    if data.dtype != np.uint8 or data.ndim != 1 or counts.dtype != np.int32 or counts.ndim != 1:
        raise ValueError(f"{where}: arrays of dtype {data.dtype} and {counts.dtype}, not uint8 bytes and int32 counts")
    if (counts < 0).any():
        raise ValueError(f"{where}: a negative token count")
    total = int(counts.sum())
    tokens = data.tobytes().decode("utf-8").split(_SEPARATOR) if total else []
    if len(tokens) != total or (not total and data.size):
        raise ValueError(f"{where}: {total} tokens counted but {len(tokens) if total else data.size} found")
    ends = np.cumsum(counts, dtype=np.int64).tolist()
    return [tokens[start:end] for start, end in zip([0, *ends[:-1]], ends)]


def _json_array(value: Any) -> np.ndarray:
    return np.array(json.dumps(value))


def _from_json_array(array: np.ndarray, where: str) -> Any:
    if array.dtype.kind != "U" or array.ndim != 0:
        raise ValueError(f"{where}: not a JSON string")
    return json.loads(str(array[()]))


def write_pairs_cache(path: Path, splits: Mapping[str, Split]) -> None:
    """``splits`` as one ``.npz`` of plain arrays (no pickle): per split, each side's tokens as UTF-8 bytes with
    the tokens per sentence, and the labels as JSON. Written to a new file beside ``path`` (an unpredictable name,
    created exclusively, never through a link), then renamed over it. ValueError when a token holds a newline."""
    arrays = {"manifest": _json_array({"version": CACHE_VERSION, "splits": list(splits)})}
    for i, (name, (a, b, labels)) in enumerate(splits.items()):
        if not len(a) == len(b) == len(labels):
            raise ValueError(f"the {name} split has {len(a)} / {len(b)} sentences and {len(labels)} labels")
        arrays[f"{i}_a"], arrays[f"{i}_a_counts"] = _pack_side(a, f"the {name} split")
        arrays[f"{i}_b"], arrays[f"{i}_b_counts"] = _pack_side(b, f"the {name} split")
        arrays[f"{i}_labels"] = _json_array(labels)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = create_temporary_beside(path, suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)  # type: ignore[arg-type]  # numpy's stubs: a keyword named like allow_pickle
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_pairs_cache(path: Path) -> dict[str, Split]:
    """The splits ``write_pairs_cache`` wrote, read with ``allow_pickle=False``; a file that is not one raises one
    of ``CACHE_READ_ERRORS``."""
    out = {}
    with np.load(path, allow_pickle=False) as data:
        manifest = _from_json_array(data["manifest"], "manifest")
        if not isinstance(manifest, dict) or manifest.get("version") != CACHE_VERSION:
            raise ValueError(f"not a version {CACHE_VERSION} pairs cache")
        for i, name in enumerate(manifest["splits"]):
            where = f"the {name} split"
            a = _unpack_side(data[f"{i}_a"], data[f"{i}_a_counts"], where)
            b = _unpack_side(data[f"{i}_b"], data[f"{i}_b_counts"], where)
            labels = _from_json_array(data[f"{i}_labels"], where)
            if not isinstance(labels, list) or not len(a) == len(b) == len(labels):
                raise ValueError(f"{where}: {len(a)} / {len(b)} sentences but labels {type(labels).__name__}")
            out[str(name)] = (a, b, labels)
    return out
