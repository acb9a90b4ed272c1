"""Multiruns: every job its own directory; a failed job is recorded, the others finish, the sweep fails naming it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_failed_job_is_recorded_and_the_others_finish(tiny_corpus, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    sweep = tmp_path / "sweep"
    cmd = [sys.executable, str(ROOT / "train.py"), "-m", "data.batch_size=1,8", "encoder=bow",
           "++trainer.fast_dev_run=true", "logger=none", "~callbacks.senteval",
           f"data.train_dir={tiny_corpus / 'train'}", f"data.valid_dir={tiny_corpus / 'valid'}",
           f"paths.cache_dir={tmp_path / 'cache'}", f"hydra.sweep.dir={sweep}", "print_config=false"]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode != 0
    assert "1 job(s) of the multirun failed" in done.stderr and "data.batch_size=1" in done.stderr
    failed = [json.loads(line) for line in (sweep / "failed_jobs.jsonl").read_text().splitlines()]
    assert [f["job"] for f in failed] == [0] and "at least 2 sentences" in failed[0]["error"]
    assert "Traceback" in (sweep / "0" / "error.txt").read_text()
    assert (sweep / "1" / "config_tree.log").is_file() and not (sweep / "1" / "error.txt").exists()
