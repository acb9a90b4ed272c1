"""Batch-size-weighted running means of an objective's outputs, kept as tensors (no sync per step)."""
from __future__ import annotations

import torch


class RunningMeans:
    """Sums ``value * batch_size`` per metric since the last ``reset``; ``means()`` divides.

    ``skip_non_finite``: a batch whose ``loss`` is NaN or inf is left out of every mean (the training logs, as Hugging
    Face's Trainer filters them; the step itself is skipped by ``sentence_lab.training.non_finite``), still without a
    host sync;
    a mean over no kept batch is NaN. Validation keeps every batch, so a NaN there shows."""

    def __init__(self, skip_non_finite: bool = False) -> None:
        self.skip_non_finite = skip_non_finite
        self.sums: dict[str, torch.Tensor] = {}
        self.count = 0
        self.kept: torch.Tensor | None = None  # the batch sizes summed over the kept batches (skip_non_finite)

    def update(self, values: dict[str, torch.Tensor], batch_size: int) -> None:
        keep = None
        if self.skip_non_finite and "loss" in values:
            keep = torch.isfinite(values["loss"].detach()).all()
            kept = keep.to(torch.float32) * batch_size
            self.kept = kept if self.kept is None else self.kept + kept
        for name, value in values.items():
            weighted = value.detach() * batch_size
            if keep is not None:
                weighted = torch.where(keep, weighted, torch.zeros_like(weighted))
            self.sums[name] = self.sums[name] + weighted if name in self.sums else weighted
        self.count += batch_size

    def means(self) -> dict[str, torch.Tensor]:
        if self.kept is None:
            return {name: total / max(self.count, 1) for name, total in self.sums.items()}
        return {name: torch.where(self.kept > 0, total / self.kept.clamp_min(1), torch.full_like(total, float("nan")))
                for name, total in self.sums.items()}

    def reset(self) -> None:
        self.sums, self.count, self.kept = {}, 0, None

    def __bool__(self) -> bool:
        return self.count > 0

    def state_dict(self) -> dict:
        state = {"sums": {k: v.detach().cpu() for k, v in self.sums.items()}, "count": self.count}
        if self.kept is not None:
            state["kept"] = self.kept.detach().cpu()
        return state

    def load_state_dict(self, state: dict, device: torch.device | None = None) -> None:
        self.sums = {k: v.to(device) if device is not None else v for k, v in state.get("sums", {}).items()}
        self.count = int(state.get("count", 0))
        kept = state.get("kept")
        if kept is None and self.skip_non_finite and self.sums:  # saved before batches were left out: every one kept
            kept = torch.tensor(float(self.count))
        self.kept = kept.to(device) if kept is not None and device is not None else kept
