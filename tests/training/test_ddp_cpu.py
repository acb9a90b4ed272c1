"""trainer=ddp_cpu: two gloo processes on this machine; the epoch shuffle still changes every epoch."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lightning.fabric.utilities.distributed import DistributedSamplerWrapper

from datamodules.contiguous import EpochShuffledSampler

ROOT = Path(__file__).resolve().parents[2]


def test_distributed_wrapper_passes_the_epoch_to_our_sampler():
    orders = {}
    for epoch in (0, 1):
        for rank in (0, 1):
            wrapper = DistributedSamplerWrapper(EpochShuffledSampler(20, seed=3), num_replicas=2, rank=rank,
                                                shuffle=False)
            wrapper.set_epoch(epoch)
            orders[epoch, rank] = list(wrapper)
    assert sorted(orders[0, 0] + orders[0, 1]) == list(range(20))  # the ranks split one epoch's batches
    assert orders[0, 0] != orders[1, 0]  # and the next epoch is shuffled anew


def test_ddp_cpu_trains_a_few_steps_in_two_processes_sharing_one_run_directory(tiny_corpus, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    cmd = [sys.executable, str(ROOT / "train.py"), "trainer=ddp_cpu", "encoder=bow", "encoder.embed_dim=16",
           "encoder.embedding_init=random", "trainer.max_epochs=2", "trainer.val_check_interval=1.0",
           "data.batch_size=8", "logger=none", "~callbacks.senteval", "print_config=false",
           f"data.train_dir={tiny_corpus / 'train'}", f"data.valid_dir={tiny_corpus / 'valid'}",
           f"paths.cache_dir={tmp_path / 'cache'}", f"paths.log_dir={tmp_path / 'logs'}"]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = (tmp_path / "logs" / "train" / "runs").iterdir()  # rank 1 writes into rank 0's directory
    log = (run / "train.log").read_text() + done.stderr
    assert "GLOBAL_RANK: 1, MEMBER: 2/2" in log
    assert sorted(p.name for p in (run / "checkpoints").glob("epoch_*.ckpt")) == ["epoch_000.ckpt", "epoch_001.ckpt"]
