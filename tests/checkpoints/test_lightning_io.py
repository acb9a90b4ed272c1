"""Checkpoints a failed write cannot corrupt, and readers that skip an unreadable checkpoint for a readable one."""
from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

import sentence_lab.checkpoints.files as checkpoint_files
from sentence_lab.checkpoints.choice import (
    check_checkpoint_path,
    newest_resumable_checkpoint,
    resolve_checkpoint,
)
from sentence_lab.checkpoints.files import CheckpointWriteError, checkpoint_problem
from sentence_lab.checkpoints.lightning_io import AtomicCheckpointIO
from tests.helpers.small_filesystem import small_filesystem

ROOT = Path(__file__).resolve().parents[2]


def _checkpoint(n: int, value: float = 1.0) -> dict:
    return {"state_dict": {"w": torch.full((n,), value)}, "epoch": 0}


def _trainer_checkpoint_io():
    """The checkpoint writer of the project's default trainer config (what every checkpoint goes through)."""
    cfg = OmegaConf.load(ROOT / "conf" / "trainer" / "default.yaml")
    trainer = instantiate(cfg, default_root_dir="/tmp", logger=False, enable_progress_bar=False,
                          enable_model_summary=False, _convert_="partial")
    return trainer.strategy.checkpoint_io


def test_the_default_trainer_writes_checkpoints_atomically():
    assert isinstance(_trainer_checkpoint_io(), AtomicCheckpointIO)


def test_a_write_failing_midway_keeps_the_previous_checkpoint_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "last.ckpt"
    AtomicCheckpointIO().save_checkpoint(_checkpoint(1000, 1.0), target)
    before = target.read_bytes()

    def disk_fills(obj, f):  # half the bytes reach the disk, then ENOSPC
        f.write(b"PK" + b"\0" * 1000)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint_files.torch, "save", disk_fills)
    with pytest.raises(CheckpointWriteError, match="last.ckpt .*No space left.*previous one is kept"):
        AtomicCheckpointIO().save_checkpoint(_checkpoint(5000, 2.0), target)
    assert target.read_bytes() == before and os.listdir(tmp_path) == ["last.ckpt"]


def test_a_full_disk_never_truncates_the_good_checkpoint(tmp_path):
    """On a real small filesystem (another one than the system's temporary folder), as the fault was found:
    the disk fills while last.ckpt is rewritten. Lightning's own writer truncates the good file there."""
    with small_filesystem(tmp_path, "2m") as small:
        io = _trainer_checkpoint_io()
        target = small / "last.ckpt"
        io.save_checkpoint(_checkpoint(100_000, 1.0), target)  # 400 KB
        good = target.read_bytes()
        filler = small / "other-files"
        with open(filler, "wb") as f:  # the other files of the run fill the disk to 100 KB from full
            f.write(b"\0" * (2 * 1024 * 1024 - len(good) - 100 * 1024))
        with pytest.raises(OSError):
            io.save_checkpoint(_checkpoint(150_000, 2.0), target)  # 600 KB: does not fit
        assert target.read_bytes() == good
        assert checkpoint_problem(target) is None
        assert sorted(os.listdir(small)) == ["last.ckpt", "other-files"]


def _run_with(tmp_path: Path, good: list[str], bad: list[str]) -> Path:
    folder = tmp_path / "logs" / "t" / "runs" / "r1" / "checkpoints"
    folder.mkdir(parents=True)
    for i, name in enumerate(good + bad):
        path = folder / name
        if name in good:
            torch.save(_checkpoint(10, float(i)), path)
        else:
            torch.save(_checkpoint(10_000, float(i)), path)
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # truncated, as a full disk leaves it
        os.utime(path, (1000 + i, 1000 + i))
    return folder


def test_resume_skips_an_unreadable_last_checkpoint_for_the_newest_readable_one(tmp_path, caplog):
    folder = _run_with(tmp_path, good=["init.ckpt", "epoch_000.ckpt"], bad=["last.ckpt"])
    cfg = OmegaConf.create({"paths": {"log_dir": str(tmp_path / "logs"), "output_dir": str(tmp_path / "new")},
                            "task_name": "t"})
    assert newest_resumable_checkpoint(cfg) == folder / "epoch_000.ckpt"
    assert "skipping" in caplog.text and "last.ckpt" in caplog.text


def test_the_run_directory_resolver_skips_an_unreadable_best_checkpoint(tmp_path, caplog):
    folder = _run_with(tmp_path, good=["epoch_000.ckpt", "last.ckpt"], bad=["best.ckpt"])
    assert resolve_checkpoint(folder.parent) == folder / "last.ckpt"
    assert "skipping" in caplog.text and "best.ckpt" in caplog.text


@pytest.mark.parametrize("content", [b"hello, world\n", b"PK\x03\x04 truncated zip"])
def test_a_file_that_is_not_a_checkpoint_is_refused_in_one_line(tmp_path, content):
    fake = tmp_path / "notes.ckpt"
    fake.write_bytes(content)
    with pytest.raises(ValueError, match="not a checkpoint"):
        resolve_checkpoint(fake)
    with pytest.raises(ValueError, match=r"ckpt_path=.*notes.ckpt: not a checkpoint"):
        check_checkpoint_path(OmegaConf.create({"ckpt_path": str(fake)}))
