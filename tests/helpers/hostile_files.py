"""Received files a sender crafted, made here from a real checkpoint of this project (never committed as binaries):
a pickle payload that touches a marker file when unpickled, and saved settings that name classes off the allow-list."""
from __future__ import annotations

import pathlib
import shutil
from pathlib import Path
from typing import Any

import torch


class TouchOnUnpickle:
    """Unpickling this calls ``Path.touch(marker)``: a stand-in for ``os.system`` that a test can observe."""

    def __init__(self, marker: Path) -> None:
        self.marker = Path(marker)

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(self.marker),))


def with_payload(checkpoint: Path, out: Path, marker: Path) -> Path:
    """``checkpoint`` (read as data) with one extra entry whose unpickling touches ``marker``, saved as ``out``."""
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    state["note"] = TouchOnUnpickle(marker)
    torch.save(state, out)
    return out


def with_settings(checkpoint: Path, out: Path, change: dict[str, Any]) -> Path:
    """``checkpoint`` with its saved settings (``hyper_parameters``) updated by ``change``: plain data, which loads
    under ``weights_only=True``."""
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    state["hyper_parameters"] = {**state["hyper_parameters"], **change}
    torch.save(state, out)
    return out


def copy_run(run: Path, to: Path) -> Path:
    """A run folder as a colleague would receive it: copied to another path."""
    shutil.copytree(run, to)
    return to
