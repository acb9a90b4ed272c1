"""Living beside facebookresearch/SentEval: both are imported as ``senteval``, and the first on ``sys.path`` wins.

Importing this package while another ``senteval`` (one with its own ``engine.py``) sits on ``sys.path`` warns
once, naming both folders, so neither shadows the other silently.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

__all__ = ["other_sentevals", "warn_if_shadowing"]

HERE = Path(__file__).resolve().parent


def other_sentevals(paths: list[str] | None = None) -> list[Path]:
    """``senteval`` packages on ``sys.path`` (or ``paths``) other than this one."""
    found: list[Path] = []
    for entry in sys.path if paths is None else paths:
        candidate = Path(entry or ".") / "senteval"
        try:
            if (candidate / "engine.py").is_file() and candidate.resolve() != HERE and candidate.resolve() not in found:
                found.append(candidate.resolve())
        except OSError:
            continue
    return found


def warn_if_shadowing(paths: list[str] | None = None) -> None:
    others = other_sentevals(paths)
    if others:
        warnings.warn(f"import senteval gave sentence-lab's SentEval API ({HERE}); the SentEval at "
                      f"{', '.join(map(str, others))} is shadowed: put its folder first on sys.path to use it",
                      stacklevel=3)
