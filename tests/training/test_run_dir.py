"""One directory per run whatever the clock says; a resumed run's log goes to its own directory."""
from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

from sentence_lab.training import run_dir
from sentence_lab.training.run_dir import move_into_run, unique_dir

ROOT = Path(__file__).resolve().parents[2]


def test_processes_started_with_the_same_time_stamp_get_their_own_directories(tmp_path):
    base = tmp_path / "runs" / "2026-01-01_00-00-00"
    code = "import sys; from training.run_dir import unique_dir; print(unique_dir(sys.argv[1]))"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(base)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
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
