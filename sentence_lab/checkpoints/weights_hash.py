"""The SHA-256 of a checkpoint's weights (its state dict: every tensor's name, dtype, shape and bytes, keys sorted),
so two runs can be compared whatever else their checkpoints record (paths, times, loop state).

    python -m sentence_lab.checkpoints.weights_hash logs/train/runs/<a>/checkpoints/last.ckpt <b>/checkpoints/last.ckpt

Prints one hash per checkpoint and, for two or more, ``all equal`` or ``DIFFERENT``.
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import torch

from sentence_lab.checkpoints.received import read_checkpoint


def _tensors(state: dict, prefix: str = "") -> dict[str, torch.Tensor]:
    """Every tensor of a state dict, an extra state's nested dicts (J_bi's noise generator) included."""
    out = {}
    for key, value in state.items():
        if isinstance(value, dict):
            out.update(_tensors(value, f"{prefix}{key}."))
        elif torch.is_tensor(value):
            out[f"{prefix}{key}"] = value
    return out


def weights_hash(path: Path | str) -> str:
    state = _tensors(read_checkpoint(path)["state_dict"])
    digest = hashlib.sha256()
    for name in sorted(state):
        tensor = state[name].detach().cpu().contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(tensor.numpy().tobytes() if tensor.dtype != torch.bfloat16 else tensor.float().numpy().tobytes())
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    paths = list(sys.argv[1:] if argv is None else argv)
    if not paths:
        raise SystemExit(__doc__)
    hashes = [(weights_hash(Path(p)), p) for p in paths]
    for value, path in hashes:
        print(f"{value}  {path}")
    if len(hashes) > 1:
        print("all equal" if len({v for v, _ in hashes}) == 1 else "DIFFERENT")
    return 0


if __name__ == "__main__":
    sys.exit(main())
