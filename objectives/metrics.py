"""Batch-size-weighted running means of an objective's outputs, kept as tensors (no sync per step)."""
from __future__ import annotations

import torch


class RunningMeans:
    """Sums ``value * batch_size`` per metric since the last ``reset``; ``means()`` divides."""

    def __init__(self) -> None:
        self.sums: dict[str, torch.Tensor] = {}
        self.count = 0

    def update(self, values: dict[str, torch.Tensor], batch_size: int) -> None:
        for name, value in values.items():
            weighted = value.detach() * batch_size
            self.sums[name] = self.sums[name] + weighted if name in self.sums else weighted
        self.count += batch_size

    def means(self) -> dict[str, torch.Tensor]:
        return {name: total / max(self.count, 1) for name, total in self.sums.items()}

    def reset(self) -> None:
        self.sums, self.count = {}, 0

    def __bool__(self) -> bool:
        return self.count > 0

    def state_dict(self) -> dict:
        return {"sums": {k: v.detach().cpu() for k, v in self.sums.items()}, "count": self.count}

    def load_state_dict(self, state: dict, device: torch.device | None = None) -> None:
        self.sums = {k: v.to(device) if device is not None else v for k, v in state.get("sums", {}).items()}
        self.count = int(state.get("count", 0))
