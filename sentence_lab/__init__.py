"""sentence-lab: train sentence encoders with the classic objectives and measure them with SentEval's protocol.

The packages, from the bottom floor up: ``text``, ``encoders``, ``objectives``, ``datamodules``, ``training``,
``runs``, ``adapters``, then ``reporting`` and ``probing_gen`` side by side, and ``cli`` on top; the evaluation
engine, ``evaluation``, stands on ``text`` alone (docs/architecture.md). What only the benchmarks, scripts and tests
use lives beside them, in ``benchmarks/lib``, and ships with none of this."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and editors see; at run time, __getattr__ below
    from sentence_lab.adapters.trained import load_model

__all__ = ["load_model"]


def __getattr__(name: str) -> Any:
    """``sentence_lab.load_model`` (``sentence_lab.adapters.trained.load_model``), imported on first use: the package
    root is imported by everything under it, and ``import senteval`` must not pay for the model code."""
    if name == "load_model":
        from sentence_lab.adapters.trained import load_model

        return load_model
    raise AttributeError(f"module 'sentence_lab' has no attribute {name!r}")
