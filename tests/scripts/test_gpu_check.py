"""The GPU check (scripts/gpu_check.py, scripts/gpu_check.sh): the slimmed wheel, the words whose GloVe rows
travel, the table of a record, and -- slow, with the registry and the task data -- ``--prepare`` then ``--dry-run``
end to end on the CPU, so that the check cannot rot between the tasks that are lent a GPU."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import zipfile
from pathlib import Path

import pytest

from sentence_lab.text.tokenizer import Tokenizer
from tests.helpers import processes

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
assert SPEC is not None and SPEC.loader is not None  # a .py file: its spec and loader exist
gpu_check = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(gpu_check)


def test_the_slim_wheel_keeps_the_library_and_a_record_of_exactly_what_it_holds(tmp_path):
    source = tmp_path / "src" / "blingfire-0.1.8-py3-none-any.whl"
    source.parent.mkdir()
    members = {"blingfire/__init__.py": b"init", "blingfire/libblingfiretokdll.so": b"so",
               "blingfire/bert_base_tok.bin": b"model", "blingfire/blingfiretokdll.dll": b"dll",
               "blingfire-0.1.8.dist-info/WHEEL": b"wheel"}
    record = "".join(f"{name},sha256=x,{len(data)}\n" for name, data in members.items())
    with zipfile.ZipFile(source, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
        z.writestr("blingfire-0.1.8.dist-info/RECORD", record + "blingfire-0.1.8.dist-info/RECORD,,\n")
    slim = gpu_check.slim_wheel(source, tmp_path)
    with zipfile.ZipFile(slim) as z:
        names = set(z.namelist())
        listed = {line.split(",")[0] for line in z.read("blingfire-0.1.8.dist-info/RECORD").decode().splitlines()}
    assert names == {"blingfire/__init__.py", "blingfire/libblingfiretokdll.so", "blingfire-0.1.8.dist-info/WHEEL",
                     "blingfire-0.1.8.dist-info/RECORD"}
    assert listed == names


def test_the_travelling_words_hold_every_cut_of_the_text_lowercased():
    words = gpu_check.words_of("Don't stop -- the U.S. River's   end.\nWhy?", Tokenizer("treebank"))
    assert {"do", "n't", "don't", "stop", "--", "u.s.", "river", "'s", "end", ".", "why", "?"} <= words
    assert not any(w != w.lower() for w in words)


def record(**parts) -> dict:
    environment = {"gpu": "NVIDIA H100 80GB HBM3", "torch": "2.11.0+cu130", "cuda": "13.0", "cudnn": 91900,
                   "modules": {"lightning": "2.6.6"}, "revision": "cd7f536f0a", "revision_dirty": False}
    return {"started": "2026-11-27T11:53:59", "environment": environment, "parts": parts, "seconds": 232.0}


def test_the_table_shows_each_part_that_ran_with_how_it_ended():
    text = gpu_check.table(record(**{
        "gpu tests": {"exit_code": 1, "timed_out": False, "seconds": 107.8, "tests": 17, "passed": 16, "failures": 1,
                      "errors": 0, "skipped": 0, "failed": ["test_x[gru-bf16-mixed]"],
                      "largest": {"bf16_relative_difference": 0.0047}},
        "default run": {"exit_code": None, "timed_out": True, "seconds": 220.2, "tasks_scored": 12,
                        "trained_epoch": 1, "mean_trained": 68.37, "mean_epoch_0": 66.53, "better": 11,
                        "epoch_seconds": 52.0, "suite_seconds": 97.5, "other_seconds": 70.7, "epochs": {0: {}, 1: {}}},
        "engine": {"error": "KeyError: 'results'"}}))
    assert "NVIDIA H100 80GB HBM3, torch 2.11.0+cu130" in text
    assert "| gpu tests | exit 1 | 107.8 |" in text
    assert "16 passed, 1 failed, 0 errors, 0 skipped; largest bf16_relative_difference 0.0047; failed: " \
           "test_x[gru-bf16-mixed]" in text
    assert "| default run | timed out | 220.2 |" in text
    assert "mean of 12 tasks after epoch 1 68.37 vs epoch 0 66.53 (11 of 12 better); epochs 52.0 s" in text
    assert "| engine | error: KeyError: 'results' |" in text
    assert "throughput" not in text and "| whole check | | 232 |" in text


def test_the_engine_rows_show_every_device_timed():
    row = {"task": "SICKRelatedness", "d": 8192, "devices": ["cuda", "cuda-stepped", "cpu"],
           "seconds": [0.9, 5.0, 12.9], "ratio": 14.3,
           "scores": [{"pearson": 0.7275}, {"pearson": 0.7275}, {"pearson": 0.72751}]}
    (line,) = gpu_check.engine_rows({"tasks": [row]})
    assert line == ("| engine SICKRelatedness 8192-d | cuda 0.90 s (pearson 0.7275) vs cuda-stepped 5.00 s (pearson "
                    "0.7275) vs cpu 12.90 s (pearson 0.7275); cpu / cuda 14.3x | |")


@pytest.mark.slow
@pytest.mark.real_data
def test_prepare_then_dry_run_end_to_end_on_the_cpu(tmp_path):
    data = os.environ.get("SENTENCE_DATA")
    if not data:
        pytest.skip("SENTENCE_DATA not set")
    env = {**os.environ, "GPU_CHECK_DIR": str(tmp_path / "prepared"), "SENTENCE_DATA": data}
    env.pop(gpu_check.GLOVE_DIR_VARIABLE, None)
    prepared = processes.run(["bash", "scripts/gpu_check.sh", "--prepare"], cwd=ROOT, env=env, capture_output=True,
                              text=True)
    assert prepared.returncode == 0, prepared.stderr[-2000:]
    carried = float(re.search(r"carries ([\d.]+) MiB", prepared.stdout).group(1))
    assert 0 < carried <= gpu_check.CARRY_LIMIT_MIB
    assert {w.name.split("-")[0] for w in (tmp_path / "prepared" / "wheels").glob("*.whl")} == {
        "hydra_core", "omegaconf", "antlr4_python3_runtime", "sacremoses", "nltk", "pytest_xdist", "execnet",
        "blingfire"}

    out = tmp_path / "out"
    dry = processes.run(["bash", "scripts/gpu_check.sh", "--dry-run", "--out", str(out)], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-2000:]
    assert "carries" in dry.stdout and "| whole check |" in dry.stdout
    doc = json.loads((out / "gpu_check.json").read_text())
    assert doc["dry_run"] and set(doc["parts"]) == set(gpu_check.PARTS)
    assert {name: part.get("exit_code") for name, part in doc["parts"].items()} == dict.fromkeys(gpu_check.PARTS, 0)
    assert ".venv" not in doc["environment"]["locations"]["blingfire"]  # the slim wheel, from the carried folder
    run = doc["parts"]["default run"]
    assert sorted(run["epochs"]) == ["0", "1", "2"] and run["tasks_scored"] == 12  # before training, both epochs
    assert doc["parts"]["gpu tests"]["tests"] == doc["parts"]["gpu tests"]["skipped"] > 0  # no CUDA here
    assert {row["precision"] for row in doc["parts"]["throughput"]["rows"]} == {"float32", "tf32", "bf16-mixed"}
    assert (out / "gpu_check_logs.tar.gz").is_file()
    record = json.loads((out / "gpu_record.json").read_text())  # what docs/gpu/ keeps of a device run
    assert record["suite_s_per_evaluation"] > 0 and record["suite_task_seconds"]
    assert record["default_run_epoch0_mean_12"] is not None and record["revision"] == doc["environment"]["revision"]
