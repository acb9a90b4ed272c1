"""Every lasting benchmark runs end to end: ``python benchmarks/<name>.py --smoke`` (in this process, as
``tests/helpers/in_process.py`` runs a script; from the repository root, SENTENCE_DATA unset: tiny inputs made by the
benchmark itself) exits 0 and writes its JSON record with the
machine, versions, revision, command and what it measured. And every script under ``benchmarks/`` follows the one
interface: a smoke case here, a docstring opening with what it measures and its command, ``--smoke`` and ``--output``
from ``benchmarks/lib`` (imported as ``lib``), no ``sys.path`` edits, a line in ``docs/development.md``."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from lib.records import RECORD_KEYS
from tests.helpers.extras import missing_extra
from tests.helpers.in_process import run_main

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
TIMEOUT = 600  # seconds: a smoke run takes seconds on an idle machine; the margin is for a busy one
# Smoke runs whose work is a few seconds at most: the rest (a training run, evaluate.py in subprocesses, MTEB) are
# marked slow.
FAST = {"check_reference_scores", "compare_senteval"}

# (benchmark, extra options, keys its record's "results" must hold, optional extra it needs)
CASES = [
    ("train_throughput", ["--compile"], {"matmul_peak_flops", "encoders", "corpus"}, None),
    ("objective_speed", [], {"objectives", "sentences"}, None),
    ("eval_speed", [], {"suite"}, None),
    ("eval_speed", ["--high-dim"], {"high_dim"}, None),
    ("probing_gen_speed", [], {"cases", "corpus_documents"}, None),
    ("probing_sources", [], {"corpus", "levels", "tasks", "groups"}, None),
    ("probing_agreement", [], {"generated", "xprobe", "tasks", "depth_definitions"}, None),
    ("check_reference_scores", [], {"rows", "compared", "equal"}, None),
    ("compare_senteval", [], {"ours", "scores_within_tolerance", "speed_up"}, None),
    ("fault_drills", [], {"drills", "held", "ran"}, None),
    ("received_file_drills", [], {"drills", "held", "ran"}, None),
    ("interop_check", [], {"largest_relative_difference", "mteb_exported", "mteb_wrapper"}, ("mteb",
                                                                                           "sentence-transformers")),
    ("training_pays_off", [], {"run_dir", "summaries", "scores"}, None),
    ("decoder_diagnostics", [], {"runs", "plot"}, None),
    ("corpus_prep", ["--train-startup"], {"cases", "corpus"}, None),
    ("cli_startup", [], {"rounds", "cases"}, None),
    ("gpu_throughput", [], {"matmul_rates", "copy_bandwidth", "rows"}, None),
    ("gpu_engine_speed", [], {"tasks", "dim", "devices"}, None),
    ("gpu_rnn_precision", [], {"rows", "batch"}, None),
    ("suite_speed", [], {"checkpoint"}, None),
    ("suite_dispatch", [], {"tasks", "families"}, None),
    ("infersent_nli", ["--count-dispatch", "2"], {"rows", "patches", "differences"}, None),
    # its ddp part is tests/runs/test_optuna_sweep.py's DDP trial, the same command
    ("pruned_sweep", ["--parts", "pruned,resume"], {"pruned", "resume"}, None),
    ("two_nodes", [], {"model", "steps", "one_node", "two_nodes", "ratio"}, None),
    ("paired_test_calibration", [], {"task", "items", "rows"}, None),
    ("curve_preset_agreement", [], {"preset", "checkpoints", "tasks", "cost"}, None),
    ("minilm_finetune", [], {"tokens_per_s", "peak_memory_mib", "scores", "suite_seconds"}, ("transformers",)),
    ("simcse_vs_st", [], {"ours", "theirs", "speed_ratio_ours_over_theirs", "stsb_test_spearman_before"},
     ("sentence-transformers",)),
]
# multi-process drills of a minute or more each, the device check's throughput runs (torch.compile, every encoder
# family), and the smoke runs that start train.py or evaluate.py several times over (half a minute or more each, alone):
# CI's second part runs them (SENTENCE_LAB_SECOND_PART=1)
SECOND_PART = {"pruned_sweep", "two_nodes", "train_throughput", "gpu_throughput", "training_pays_off", "cli_startup",
               "received_file_drills", "corpus_prep"}


def _case(name, options, keys, extras):
    marks = [] if name in FAST else [pytest.mark.slow]
    marks += [pytest.mark.second_part] if name in SECOND_PART else []
    return pytest.param(name, options, keys, extras, marks=marks, id=" ".join([name, *options]))


def run_smoke(name: str, options: list[str], output: Path) -> subprocess.CompletedProcess:
    """``python benchmarks/<name>.py --smoke``, run in this process (the benchmark's own subprocesses stay theirs)."""
    env = {k: v for k, v in os.environ.items() if k != "SENTENCE_DATA"}
    return run_main(f"benchmarks/{name}.py", ["--smoke", *options, "--output", str(output)], cwd=ROOT, env=env,
                    timeout=TIMEOUT)


@pytest.mark.slow
@pytest.mark.parametrize("name,options,keys,extras", [_case(*c) for c in CASES])
def test_smoke_run_writes_its_record(name, options, keys, extras, tmp_path):
    for extra in extras or ():
        if missing_extra(extra):
            pytest.skip(missing_extra(extra))
    output = tmp_path / "record.json"
    done = run_smoke(name, options, output)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    record = json.loads(output.read_text())
    assert set(RECORD_KEYS) <= set(record), set(RECORD_KEYS) - set(record)
    assert record["benchmark"] == name and record["smoke"] is True
    assert f"benchmarks/{name}.py --smoke" in record["command"]
    assert {"platform", "processor", "cpu_count"} <= set(record["machine"])
    assert {"python", "torch", "numpy"} <= set(record["versions"])
    assert keys <= set(record["results"]), keys - set(record["results"])
    assert f"record: {output}" in done.stdout


def test_every_benchmark_follows_the_interface():
    scripts = sorted(p.stem for p in BENCHMARKS.glob("*.py"))
    assert scripts == sorted({c[0] for c in CASES}), "a benchmark without a smoke case here, or a case without one"
    development = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    for name in scripts:
        source = (BENCHMARKS / f"{name}.py").read_text(encoding="utf-8")
        docstring = re.match(r'"""(.*?)"""', source, re.S)
        assert docstring, f"{name}: no module docstring"
        assert f"python benchmarks/{name}.py" in docstring.group(1), f"{name}: its docstring gives no command"
        assert "records.add_options(" in source and "records.start(" in source, f"{name}: not the shared interface"
        assert "sys.path.insert" not in source and "sys.path.append" not in source, f"{name}: edits sys.path"
        assert f"python benchmarks/{name}.py" in development, f"docs/development.md does not list {name}"
