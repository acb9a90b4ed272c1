"""trainer=ddp_cpu: two gloo processes on this machine; the epoch shuffle still changes every epoch."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from lightning.fabric.utilities.distributed import DistributedSamplerWrapper

from sentence_lab.datamodules.contiguous import EpochShuffledGroups, EpochShuffledSampler
from tests.helpers import processes
from tests.helpers.extras import needs_extra

pytestmark = pytest.mark.slow  # end-to-end: outside the fast tier (-m "not slow")

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


def test_distributed_wrapper_splits_batches_of_runs_whole():
    ranks = [list(DistributedSamplerWrapper(EpochShuffledGroups(12, group=3, seed=3), num_replicas=2, rank=rank,
                                            shuffle=False)) for rank in (0, 1)]
    # Each rank gets two of the four batches of runs, each batch whole: every run once over the ranks.
    assert [len(batch) for rank in ranks for batch in rank] == [3, 3, 3, 3]
    assert sorted(run for rank in ranks for batch in rank for run in batch) == list(range(12))


def ddp_env(**env: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", **env)


BOW = ("encoder=bow", "encoder.embed_dim=16", "encoder.embedding_init=random")


def ddp_command(script: Path, tiny_corpus: Path, tmp_path: Path, *overrides: str,
                encoder: tuple[str, ...] = BOW) -> list[str]:
    return [sys.executable, str(script), "trainer=ddp_cpu", *encoder, "trainer.max_epochs=2",
            "++trainer.val_check_interval=1.0", "data.batch_size=8", "logger=none", "print_config=false",
            "callbacks=[default,epoch_checkpoints]",
            f"data.train_dir={tiny_corpus / 'train'}", f"data.valid_dir={tiny_corpus / 'valid'}",
            f"paths.cache_dir={tmp_path / 'cache'}", f"paths.log_dir={tmp_path / 'logs'}", *overrides]


FAULTS = ROOT / "tests" / "helpers" / "rank_faults.py"


def run_ddp(cmd: list[str], tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, Path]:
    done = processes.run(cmd, cwd=tmp_path, env=ddp_env(**env), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = (tmp_path / "logs" / "train" / "runs").iterdir()  # rank 1 writes into rank 0's directory
    log = (run / "train.log").read_text() + done.stderr
    assert "GLOBAL_RANK: 1, MEMBER: 2/2" in log
    assert sorted(p.name for p in (run / "checkpoints").glob("epoch_*.ckpt")) == ["epoch_000.ckpt", "epoch_001.ckpt"]
    return done, run


def test_ddp_cpu_trains_a_few_steps_in_two_processes_sharing_one_run_directory(tiny_corpus, tmp_path):
    _, run = run_ddp(ddp_command(ROOT / "train.py", tiny_corpus, tmp_path, "~callbacks.eval_suite"), tmp_path)
    assert (run / "checkpoints" / "init.ckpt").is_file()


@pytest.mark.second_part
def test_ddp_cpu_trains_the_transformer_in_two_processes(tiny_corpus, tmp_path):
    """encoder=transformer under trainer=ddp_cpu: both ranks join (run_ddp reads rank 1 in the log), each epoch's
    checkpoint is written, and the blocks' weights moved between them."""
    cmd = ddp_command(ROOT / "train.py", tiny_corpus, tmp_path, "~callbacks.eval_suite", "encoder=transformer",
                      "encoder.d_model=16", "encoder.num_layers=1", "encoder.num_heads=2", "encoder.ffn_dim=32",
                      "encoder.embed_dim=16", "encoder.freeze_embeddings=false")
    _, run = run_ddp(cmd, tmp_path)
    first = torch.load(run / "checkpoints" / "epoch_000.ckpt", map_location="cpu", weights_only=True)["state_dict"]
    last = torch.load(run / "checkpoints" / "epoch_001.ckpt", map_location="cpu", weights_only=True)["state_dict"]
    blocks = [k for k in last if ".blocks.0." in k]
    assert blocks and any(not torch.equal(first[k], last[k]) for k in blocks)


@pytest.mark.second_part
def test_ddp_cpu_trains_simcse_with_the_negatives_of_both_processes(tiny_corpus, tmp_path):
    """objective=simcse objective.gather=true under trainer=ddp_cpu (the gradient it gives is checked against one
    process's in tests/objectives/test_simcse.py): both ranks train two epochs and the word vectors move."""
    cmd = ddp_command(ROOT / "train.py", tiny_corpus, tmp_path, "~callbacks.eval_suite", "objective=simcse",
                      "objective.gather=true", "encoder.dropout=0.1", "encoder.freeze_embeddings=false")
    _, run = run_ddp(cmd, tmp_path)
    first = torch.load(run / "checkpoints" / "epoch_000.ckpt", map_location="cpu", weights_only=True)["state_dict"]
    last = torch.load(run / "checkpoints" / "epoch_001.ckpt", map_location="cpu", weights_only=True)["state_dict"]
    assert any(not torch.equal(first[k], last[k]) for k in last if "embedding" in k)


@pytest.mark.second_part
@needs_extra("transformers")
def test_ddp_cpu_fine_tunes_minilm_in_two_processes(tiny_corpus, tmp_path):
    """encoder=pretrained (all-MiniLM-L6-v2) under trainer=ddp_cpu: both ranks load the model, join and train two
    epochs of QT; the top block's weights moved between the two epochs' checkpoints."""
    cmd = ddp_command(ROOT / "train.py", tiny_corpus, tmp_path, "~callbacks.eval_suite",
                      "+trainer.limit_train_batches=3", encoder=("encoder=pretrained",))
    _, run = run_ddp(cmd, tmp_path)
    first = torch.load(run / "checkpoints" / "epoch_000.ckpt", map_location="cpu", weights_only=True)["state_dict"]
    last = torch.load(run / "checkpoints" / "epoch_001.ckpt", map_location="cpu", weights_only=True)["state_dict"]
    top = [k for k in last if "encoder.layer.5." in k]
    assert top and any(not torch.equal(first[k], last[k]) for k in top)


def test_a_rank_seconds_late_at_train_start_neither_hangs_nor_skips_a_collective(tiny_corpus, tmp_path):
    """Rank 1 reaches on_train_start 3 s after rank 0 (issue 31: a rank 0 deciding alone would have written init.ckpt
    by then, and rank 1, seeing it, skipped the collective save)."""
    cmd = ddp_command(FAULTS, tiny_corpus, tmp_path, "~callbacks.eval_suite",
                      "trainer.strategy.timeout.seconds=120")
    _, run = run_ddp(cmd, tmp_path, SLOW_RANK_DELAY_S="3")
    assert (run / "checkpoints" / "init.ckpt").is_file()


@pytest.mark.parametrize("with_data", [True, False], ids=["task-data", "no-task-data"])
def test_a_late_rank_with_the_per_epoch_suite_on_rank_zero(with_data, tiny_corpus, senteval_root, tmp_path):
    """The same order with the evaluation suite on rank 0 before training and after each epoch; and with no task
    data at all, where rank 0 skips every evaluation and the other ranks must skip its barrier too."""
    data_dir = senteval_root if with_data else tmp_path / "empty"
    cmd = ddp_command(FAULTS, tiny_corpus, tmp_path,
                      f"callbacks.eval_suite.data_dir={data_dir}", "callbacks.eval_suite.tasks=[Length,WordContent]",
                      "callbacks.eval_suite.probing=xprobe", "callbacks.eval_suite.params.l2_grid=[1e-3]",
                      "callbacks.eval_suite.params.max_epoch=4", "trainer.strategy.timeout.seconds=120")
    _, run = run_ddp(cmd, tmp_path, SLOW_RANK_DELAY_S="3")
    written = sorted(p.name for p in (run / "eval").glob("epoch_*.json")) if (run / "eval").is_dir() else []
    assert written == (["epoch_000.json", "epoch_001.json", "epoch_002.json"] if with_data else [])


def test_a_rank_that_hangs_ends_the_run_after_the_process_group_timeout(tiny_corpus, tmp_path):
    """Rank 1 stops (SIGSTOP) at step 3: rank 0 ends with a one-line error naming it after the 10 s timeout, not
    never."""
    cmd = ddp_command(FAULTS, tiny_corpus, tmp_path, "~callbacks.eval_suite", "trainer.strategy.timeout.seconds=10")
    proc = processes.start(cmd, cwd=tmp_path, env=ddp_env(STOP_RANK_AT_STEP="3"), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    try:
        _, err = proc.communicate(timeout=240)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the stopped rank, whatever happened
    assert proc.returncode == 1, err[-2000:]
    assert time.monotonic() - started < 200
    (line,) = [line for line in err.splitlines() if line.startswith("error:")]
    assert "rank 1 did not answer within the process group's timeout (10 s)" in line  # its sign of life stopped too
    assert "trainer.strategy.timeout.seconds" in line
