"""Weights holding NaN or inf are written into no checkpoint and no export: ``refuse_non_finite`` names the first
such tensors."""
from __future__ import annotations

from typing import Any

import torch


class NonFiniteWeights(ValueError):
    """Weights holding NaN or inf: no checkpoint is written with them (nor exported)."""


def non_finite_tensors(state_dict: dict[str, Any]) -> list[str]:
    """The names of the floating-point tensors of ``state_dict`` that hold a NaN or an inf."""
    return [name for name, value in state_dict.items()
            if isinstance(value, torch.Tensor) and value.is_floating_point() and not bool(torch.isfinite(value).all())]


def refuse_non_finite(state_dict: dict[str, Any], what: str) -> None:
    """``NonFiniteWeights`` naming the first tensors that hold NaN or inf, if any."""
    bad = non_finite_tensors(state_dict)
    if bad:
        shown = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
        raise NonFiniteWeights(f"{what}: the weights hold NaN or inf ({shown}), so it was not written; the run's "
                               "earlier checkpoints are kept")
