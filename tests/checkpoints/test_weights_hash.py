"""``python -m sentence_lab.checkpoints.weights_hash``: the same weights give the same hash whatever else a checkpoint
records; other weights, another hash."""
from __future__ import annotations

import sys

import pytest
import torch

from sentence_lab.checkpoints.weights_hash import main, weights_hash
from tests.helpers import processes


def _checkpoint(target, weight: float, **other) -> str:
    torch.save({"state_dict": {"w": torch.full((3,), weight), "extra": {"noise": torch.arange(2)}}, **other}, target)
    return str(target)


def test_the_hash_reads_the_weights_alone(tmp_path, capsys):
    a = _checkpoint(tmp_path / "a.ckpt", 1.0, epoch=1, path="/runs/a")
    b = _checkpoint(tmp_path / "b.ckpt", 1.0, epoch=7, path="/runs/b")
    c = _checkpoint(tmp_path / "c.ckpt", 2.0)
    assert weights_hash(a) == weights_hash(b) != weights_hash(c)
    assert main([a, b]) == 0 and capsys.readouterr().out.endswith("all equal\n")
    main([a, c])
    assert capsys.readouterr().out.endswith("DIFFERENT\n")


@pytest.mark.slow
def test_it_runs_as_a_module(tmp_path):
    a = _checkpoint(tmp_path / "a.ckpt", 1.0)
    done = processes.run([sys.executable, "-m", "sentence_lab.checkpoints.weights_hash", a], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith(weights_hash(a))
