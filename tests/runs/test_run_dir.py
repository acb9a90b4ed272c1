"""One directory per run whatever the clock says; a resumed run's log goes to its own directory."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from sentence_lab.runs import run_dir
from sentence_lab.runs.run_dir import RunDirTaken, claim_run_dir, move_into_run, unique_dir
from tests.helpers import processes
from tests.helpers.in_process import run_command

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # processes started at once: over a second
def test_processes_started_with_the_same_time_stamp_get_their_own_directories(tmp_path):
    base = tmp_path / "runs" / "2026-01-01_00-00-00"
    code = "import sys; from sentence_lab.runs.run_dir import unique_dir; print(unique_dir(sys.argv[1]))"
    procs = [processes.start([sys.executable, "-c", code, str(base)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    dirs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert len(set(dirs)) == 4 and all(Path(d).is_dir() for d in dirs)
    assert sorted(Path(d).name for d in dirs) == [base.name] + [f"{base.name}_{n}" for n in (1, 2, 3)]


def test_the_same_process_resolving_again_gets_the_same_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(run_dir, "_chosen", {})
    base = str(tmp_path / "2026-01-01_00-00-00")
    assert unique_dir(base) == unique_dir(base) == base


def test_a_resumed_start_appends_its_log_to_the_run_and_leaves_no_stub(tmp_path):
    run, stub = tmp_path / "run", tmp_path / "stub"
    (run / ".hydra").mkdir(parents=True)
    (run / "train.log").write_text("first part\n")
    (stub / ".hydra").mkdir(parents=True)
    (stub / ".hydra" / "overrides.yaml").write_text("- resume=true\n")
    handler = logging.FileHandler(stub / "train.log", encoding="utf-8")
    logger = logging.getLogger("test_run_dir")
    logger.addHandler(handler)
    logger.warning("before the move")
    move_into_run(stub, run)
    logger.warning("after the move")
    for h in list(logger.handlers):
        h.close()
        logger.removeHandler(h)
    assert not stub.exists()
    assert (run / "train.log").read_text().splitlines() == ["first part", "before the move", "after the move"]
    assert (run / ".hydra" / "resumed" / "stub" / "overrides.yaml").is_file()


def _a_run(folder: Path, *names: str) -> Path:
    """A run directory as train.py leaves it: .hydra/ and checkpoints/<names> (real checkpoint files)."""
    (folder / ".hydra").mkdir(parents=True)
    (folder / "checkpoints").mkdir()
    for name in names:
        torch.save({"state_dict": {}, "hyper_parameters": {}}, folder / "checkpoints" / name)
    return folder


def test_a_fresh_run_is_refused_a_directory_holding_another_runs_checkpoints(tmp_path):
    run = _a_run(tmp_path / "bow", "best.ckpt", "last.ckpt")
    with pytest.raises(RunDirTaken, match=r"hydra.run.dir=.*bow already holds a run \(checkpoints/best.ckpt, last"
                                          r".ckpt\).*resume=true.*choose another directory"):
        claim_run_dir(["encoder=gru", f"hydra.run.dir={run}"])
    other = _a_run(tmp_path / "other", "last.ckpt")
    with pytest.raises(RunDirTaken):  # a checkpoint of another run does not make this directory free
        claim_run_dir([f"hydra.run.dir={run}", f"ckpt_path={other / 'checkpoints' / 'last.ckpt'}"])


def test_resume_true_with_an_explicit_directory_resumes_that_run(tmp_path):
    run = _a_run(tmp_path / "bow", "best.ckpt", "last.ckpt")
    assert claim_run_dir(["resume=true", f"++hydra.run.dir={run}"]) == \
        ["resume=true", f"ckpt_path={run / 'checkpoints' / 'last.ckpt'}"]
    ckpt = f"ckpt_path={run / 'checkpoints' / 'best.ckpt'}"
    assert claim_run_dir([ckpt, f"hydra.run.dir={run}"]) == [ckpt]  # its own checkpoint: the run goes on there


def test_directories_without_checkpoints_and_sweeps_are_left_to_hydra(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert claim_run_dir([f"hydra.run.dir={empty}"]) == [f"hydra.run.dir={empty}"]
    run = _a_run(tmp_path / "bow", "last.ckpt")
    assert claim_run_dir(["-m", f"hydra.run.dir={run}"]) == ["-m", f"hydra.run.dir={run}"]  # a sweep has no run dir
    assert claim_run_dir(["hydra.run.dir=${paths.log_dir}/x"]) == ["hydra.run.dir=${paths.log_dir}/x"]


def test_resume_true_with_no_readable_checkpoint_is_one_line(tmp_path):
    run = _a_run(tmp_path / "bow")
    (run / "checkpoints" / "last.ckpt").write_text("truncated")
    with pytest.raises(FileNotFoundError, match="none of its checkpoints .*last.ckpt.* is readable"):
        claim_run_dir(["resume=true", f"hydra.run.dir={run}"])


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_train_py_never_writes_a_new_run_into_another_runs_directory(tiny_corpus, tmp_path):
    run, logs = tmp_path / "bow_run", tmp_path / "logs"

    def train(*overrides: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, str(ROOT / "train.py"), "encoder=bow", "encoder.embed_dim=16",
               "encoder.embedding_init=random", "trainer.max_epochs=5", "logger=none", "print_config=false",
               "~callbacks.eval_suite", "~callbacks.rich_progress_bar", "data.batch_size=8",
               f"data.train_dir={tiny_corpus / 'train'}", f"data.valid_dir={tiny_corpus / 'valid'}",
               f"paths.cache_dir={tmp_path / 'cache'}", f"paths.log_dir={logs}", "trainer.num_sanity_val_steps=0",
               *overrides]
        return run_command(cmd, cwd=tmp_path, env=dict(os.environ, OMP_NUM_THREADS="1"))

    assert train("trainer.max_steps=2", f"hydra.run.dir={run}").returncode == 0
    before = _files(run)
    for overrides, expected in [(["encoder=gru"], "already holds a run"),
                                (["trainer.max_steps=4"], "already holds a run"),
                                (["resume=true", "encoder=gru"], "was trained with other settings: encoder._target_="),
                                (["resume=true", "encoder.embed_dim=32"],
                                 "encoder.embed_dim=32 (the checkpoint has 16)")]:
        done = train(*overrides, f"hydra.run.dir={run}")
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert done.returncode == 1 and len(errors) == 1 and expected in errors[0], (overrides, done.stderr[-2000:])
        assert _files(run) == before, overrides  # not a byte of the run changed
    done = train("resume=true", "trainer.max_steps=4", f"hydra.run.dir={run}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)["global_step"] == 4
    after = _files(run)
    assert after[".hydra/config.yaml"] == before[".hydra/config.yaml"]  # the run's own config kept
    assert after["train.log"].startswith(before["train.log"])  # the resumed part appended
    assert any(name.startswith(".hydra/resumed/") for name in after)


def test_quoted_directories_are_read_as_hydra_reads_them(tmp_path):
    run = _a_run(tmp_path / "bow run", "last.ckpt")
    for quoted in (f'hydra.run.dir="{run}"', f"hydra.run.dir='{run}'"):
        with pytest.raises(RunDirTaken):
            claim_run_dir([quoted])


def test_the_other_ranks_of_a_ddp_run_pass_into_rank_zeros_directory(tmp_path):
    run = _a_run(tmp_path / "bow", "last.ckpt")
    child = [f"ckpt_path={run / 'checkpoints' / 'last.ckpt'}", f'hydra.run.dir="{run}"',
             "hydra.job.name=train_ddp_process_1", "hydra.output_subdir=null"]
    assert claim_run_dir(child) == child


def test_a_sweep_directory_holding_runs_is_refused_before_hydra_writes(tmp_path):
    sweep = tmp_path / "sweep"
    _a_run(sweep / "0", "last.ckpt")
    with pytest.raises(RunDirTaken, match="hydra.sweep.dir=.*sweep already holds a run"):
        claim_run_dir(["-m", "seed=1,2", f"hydra.sweep.dir={sweep}"])
    assert claim_run_dir(["-m", f"hydra.sweep.dir={tmp_path / 'new'}"]) == ["-m", f"hydra.sweep.dir={tmp_path / 'new'}"]
