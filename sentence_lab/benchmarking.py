"""What every script under ``benchmarks/`` shares: the ``--smoke`` / ``--output`` options, the JSON record of a
run (what it measured, with the machine, Python and library versions, git revision and the exact command) and the
tiny inputs of the smoke runs (an ordered corpus, a SentEval data tree), made here so that no smoke run needs
``SENTENCE_DATA`` or the network.

    from sentence_lab import benchmarking as benchmark

    parser = argparse.ArgumentParser(...)
    benchmark.add_options(parser, "what the smoke run does")
    args = parser.parse_args()
    run = benchmark.start("eval_speed", args, ROOT)
    ...
    run.write({"tasks": rows})          # prints and returns the record's path

``tests/benchmarks/test_smoke.py`` runs each benchmark's ``--smoke`` and reads its record.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import random
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import torch
from lightning.pytorch.callbacks import Callback
from torch.utils.flop_counter import FlopCounterMode

from sentence_lab.evaluation import regimes
from sentence_lab.evaluation.baselines import BowGloveEncoder
from sentence_lab.evaluation.dispatch_counts import Dispatched, HostReads, RecurrentCallsAsOne
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.regimes import features
from sentence_lab.evaluation.results import git_revision, library_versions
from sentence_lab.evaluation.runner import load_tasks
from sentence_lab.evaluation.tasks.made_up import (
    sick_rows,
    write_binary,
    write_mrpc,
    write_sick,
    write_sst,
    write_sts,
    write_stsb,
    write_trec,
)
from sentence_lab.evaluation.tasks.sts import STS_DATASETS

RECORD_KEYS = ("benchmark", "command", "cwd", "smoke", "started", "seconds", "machine", "python", "versions",
               "git_revision", "results")


def add_options(parser: argparse.ArgumentParser, smoke: str = "a tiny input made here, end to end in seconds") -> None:
    """``--smoke`` (what the smoke run does: ``smoke``) and ``--output`` (the JSON record)."""
    parser.add_argument("--smoke", action="store_true", help=f"smoke run: {smoke}")
    parser.add_argument("--output", type=Path, default=None,
                        help="the JSON record of this run (default: logs/benchmarks/<benchmark>/<time>.json)")


def machine() -> dict[str, Any]:
    """Platform, processor, CPU count (and the CPUs this process may use), load average."""
    processor = platform.processor()
    try:  # platform.processor() is empty on most Linux systems: the model name of /proc/cpuinfo instead
        processor = processor or next(line.split(":", 1)[1].strip() for line in
                                      Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    out = {"platform": platform.platform(), "machine": platform.machine(), "processor": processor,
           "cpu_count": os.cpu_count()}
    if hasattr(os, "sched_getaffinity"):
        out["cpus_usable"] = len(os.sched_getaffinity(0))
    if hasattr(os, "getloadavg"):
        out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return out


def versions(*extra: str) -> dict[str, str]:
    """:func:`library_versions` and those of ``extra`` distributions that are installed."""
    out = library_versions()
    for name in extra:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


@dataclass
class Run:
    """One run of a benchmark: where its record goes and what it records besides its figures."""

    name: str
    output: Path
    smoke: bool
    started: str = field(default_factory=lambda: datetime.datetime.now().astimezone().isoformat(timespec="seconds"))
    clock: float = field(default_factory=time.perf_counter)

    def record(self, results: Any, libraries: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
        return {"benchmark": self.name, "command": shlex.join(getattr(sys, "orig_argv", [sys.executable, *sys.argv])),
                "cwd": os.getcwd(), "smoke": self.smoke, "started": self.started,
                "seconds": round(time.perf_counter() - self.clock, 2), "machine": machine(),
                "python": platform.python_version(), "versions": versions(*libraries),
                "git_revision": git_revision(), **extra, "results": results}

    def write(self, results: Any, libraries: tuple[str, ...] = (), **extra: Any) -> Path:
        """Write the record (``results``: what was measured, JSON-able; ``libraries``: more distributions whose
        versions matter; ``extra``: more top-level fields) and print its path."""
        self.output.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.record(results, libraries, **extra), indent=1, default=str)
        tmp = self.output.with_name(self.output.name + ".part")
        tmp.write_text(text + "\n")
        tmp.replace(self.output)
        print(f"record: {self.output}", flush=True)
        return self.output


def start(name: str, args: argparse.Namespace, root: Path) -> Run:
    """A run of benchmark ``name`` with the options of :func:`add_options`; the default record is
    ``<root>/logs/benchmarks/<name>/<time>[-smoke].json``."""
    smoke = bool(getattr(args, "smoke", False))
    output = getattr(args, "output", None)
    if output is None:
        stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
        output = Path(root) / "logs" / "benchmarks" / name / f"{stamp}{'-smoke' if smoke else ''}.json"
    return Run(name, Path(output), smoke)


# ---- the smoke runs' inputs ---------------------------------------------------------------------------------------

WORDS = ("the cat dog man woman saw ran walked house tree river old young red blue quickly slowly and but with "
         "under over a an is was were sat stood").split()
POSITIVE, NEGATIVE = "good great fine nice happy".split(), "bad awful poor sad ugly".split()


def _sentence(rng: random.Random, extra: list[str] | None = None, lo: int = 3, hi: int = 9) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))] + ([rng.choice(extra)] if extra else [])
    rng.shuffle(words)
    return " ".join(words)


def _similar(rng: random.Random, sentence: str) -> str:
    """``sentence`` with one more word: close, but not the same (no tied cosines of 1)."""
    words = sentence.split()
    words.insert(rng.randint(0, len(words)), rng.choice(WORDS))
    return " ".join(words)


# InferSent's files that benchmarks/infersent_nli.py runs (facebookresearch/InferSent before c752882, which removed
# them); the GPU check carries them when told where they are.
INFERSENT_FILES = ("train_nli.py", "data.py", "models.py", "mutils.py")


def tiny_nli(folder: Path, pairs: int, seed: int = 0) -> Path:
    """Made-up NLI pairs in InferSent's format (``s1``, ``s2``, ``labels`` . ``train``, ``dev``, ``test``): ``pairs``
    for training, a quarter of that for dev and for test; a hypothesis is its premise with a word more."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    labels = ("entailment", "neutral", "contradiction")
    for split, n in (("train", pairs), ("dev", max(pairs // 4, 8)), ("test", max(pairs // 4, 8))):
        premises = [_sentence(rng) for _ in range(n)]
        (folder / f"s1.{split}").write_text("\n".join(premises) + "\n")
        (folder / f"s2.{split}").write_text("\n".join(_similar(rng, p) for p in premises) + "\n")
        (folder / f"labels.{split}").write_text("\n".join(rng.choice(labels) for _ in range(n)) + "\n")
    return folder


def write_corpus(folder: Path, n_docs: int, sentences: int, seed: int) -> Path:
    """``n_docs`` documents of ``sentences`` random short sentences each (one paragraph per document)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for d in range(n_docs):
        text = " ".join(_sentence(rng).capitalize() + "." for _ in range(sentences))
        (folder / f"doc{d:02d}.txt").write_text(text + "\n", encoding="utf-8")
    return folder


def tiny_corpus(root: Path, sentences: int = 40) -> Path:
    """``root/train`` (3 documents) and ``root/valid`` (1), the layout ``data.train_dir`` / ``data.valid_dir`` read."""
    write_corpus(root / "train", 3, sentences, 0)
    write_corpus(root / "valid", 1, max(8, sentences // 2), 1)
    return root


def tiny_senteval(root: Path, n: int = 40, seed: int = 0) -> Path:
    """A data root in SentEval's layout (``root/senteval/<TASK>``) with a few dozen made-up examples of MR, TREC,
    SST2, MRPC, SICK, STSBenchmark and STS12-16: every regime once (nested CV, k-fold then test, train/dev/test,
    relatedness, cosine). Labels follow cue words, so the scores are above chance. Returns ``root``."""
    rng = random.Random(seed)
    se = root / "senteval"
    positive = [_sentence(rng, POSITIVE) for _ in range(n)]
    write_binary(se, "MR", positive, [_sentence(rng, NEGATIVE) for _ in range(n)])
    for split, size in (("train", n), ("dev", n // 2), ("test", n // 2)):
        write_sst(se, "binary", split, [(i % 2, _sentence(rng, POSITIVE if i % 2 else NEGATIVE)) for i in range(size)])
    coarse, cues = ["DESC", "HUM", "LOC"], [["why"], ["who"], ["where"]]
    for split, size in (("train", 2 * n), ("test", n // 2)):
        write_trec(se, split, [(coarse[i % 3], _sentence(rng, cues[i % 3])) for i in range(size)])
    for split, size in (("train", n), ("test", n // 2)):
        mrpc = []
        for i in range(size):
            a = _sentence(rng, POSITIVE)
            mrpc.append((i % 2, a, a if i % 2 else _sentence(rng, NEGATIVE)))
        write_mrpc(se, split, mrpc)
    for split, size in [("train", n), ("dev", n // 2), ("test", n // 2)]:
        write_sick(se, split, sick_rows(rng, size, lambda: _sentence(rng, POSITIVE), lambda: _sentence(rng, NEGATIVE),
                                              lambda: _sentence(rng, None)))
    for split, size in (("train", n), ("dev", n // 2), ("test", n // 2)):
        stsb = []
        for i in range(size):
            a = _sentence(rng, POSITIVE)
            b = _similar(rng, a) if i % 2 else _sentence(rng, NEGATIVE)
            stsb.append(((4.5 if i % 2 else 1.0) + rng.random() * 0.5, a, b))
        write_stsb(se, split, stsb)
    for year, names in STS_DATASETS.items():
        for name in names:
            pairs = [(_sentence(rng, POSITIVE), i % 2) for i in range(8)]
            triples = [(a, _similar(rng, a) if same else _sentence(rng, NEGATIVE), same) for a, same in pairs]
            write_sts(se, year, name, [(a, b) for a, b, _ in triples],
                      [f"{(5.0 if same else 1.0) - rng.random():.2f}" for _, _, same in triples])
    return root


def use_senteval_checkout(folder: Path | str) -> Path:
    """Make ``import senteval`` find SentEval's own package in ``folder`` (a checkout or copy holding ``senteval/``)
    instead of this project's SentEval API: the one place a benchmark reaches code outside the installed project
    (``compare_senteval.py``, ``eval_speed.py --high-dim --reference``). Returns the folder."""
    folder = Path(folder).resolve()
    if not (folder / "senteval").is_dir():
        raise SystemExit(f"{folder} holds no senteval/ package: --reference names a SentEval checkout")
    for name in [m for m in sys.modules if m == "senteval" or m.startswith("senteval.")]:
        del sys.modules[name]  # this project's senteval, if imported already
    sys.path.insert(0, str(folder))
    return folder


# What an installed command must not see of the clone it was built from (tests/test_packaging.py, the fault drills).
CLONE_VARIABLES = ("PROJECT_ROOT", "SENTENCE_DATA", "SENTENCE_CACHE", "SENTENCE_LAB_HOME", "PYTHONPATH")


def fresh_environment_with(wheel: Path, where: Path) -> Path:
    """A new virtual environment at ``where`` holding ``wheel`` alone (its console scripts in ``where/bin``); the
    dependencies are read from this interpreter's site-packages, appended to its path, so no editable hook of the
    clone is active there. Returns its site-packages folder."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    python = where / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
                   check=True, capture_output=True, timeout=600)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz_dependencies.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n")
    return site


def files_under(folder: Path) -> set[str]:
    """Every file below ``folder`` (compiled ``__pycache__`` aside), relative to it."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


class ProjectedBow:
    """``bow_glove`` times a fixed Gaussian matrix ``[50, dim]`` (scaled by 1/sqrt(50)), float32: the vectors of a
    ``dim``-d encoder whose encoding costs nothing, so that the classifiers are timed alone."""

    def __init__(self, dim: int = 4096, seed: int = 0):
        self.bow = BowGloveEncoder()
        self.P = (np.random.RandomState(seed).randn(50, dim) / np.sqrt(50)).astype(np.float32)

    def encode(self, sentences: list[str]) -> np.ndarray:
        return self.bow.encode(sentences) @ self.P


def loaded_tasks(names: str, data: Path) -> list[Any]:
    """The comma-separated tasks ``names`` loaded from the data root ``data``; a one-line ``SystemExit`` naming the
    ones it holds no data for."""
    loaded = [t for t in load_tasks(names.split(","), data) if t.data is not None]
    missing = sorted(set(names.split(",")) - {t.spec.name for t in loaded})
    if missing:
        raise SystemExit(f"no data for {', '.join(missing)} under {data}: set SENTENCE_DATA to the data root")
    return loaded


def task_features(task: Any, embed: Callable[[list[str]], np.ndarray]) -> tuple[dict, dict]:
    """A loaded task's features (``embed``'s vectors, paired as the task asks) and labels by split, as its regime
    reads them (regression targets as float64)."""
    spec, splits = task.spec, task.data.splits
    X = {k: features(s, embed, spec.features) for k, s in splits.items()}
    y = {k: (s.y.astype(np.float64) if spec.regime == "regression" else s.y) for k, s in splits.items()}
    return X, y


def run_regime(spec: Any, X: dict, y: dict, params: ProtocolParams, nclasses: int | None) -> dict:
    """One task's classifier protocol (``spec.regime``) on ready features ``X`` and labels ``y`` by split."""
    if spec.regime == "nested":
        return regimes.nested_cv(X["all"], y["all"], params, nclasses)
    if spec.regime == "kfold":
        return regimes.kfold_then_test(X["train"], y["train"], X["test"], y["test"], params, nclasses)
    if spec.regime == "split":
        return regimes.train_dev_test(X["train"], y["train"], X["dev"], y["dev"], X["test"], y["test"], params,
                                      nclasses)
    return regimes.relatedness(X["train"], y["train"], X["dev"], y["dev"], X["test"], y["test"], params)


def _mkldnn_rnn_flops(input_shape, w_ih_shape, w_hh_shape, *args, **kwargs) -> int:
    """oneDNN's fused RNN layer (CPU LSTM), which FlopCounterMode does not know: 2 FLOPs per MAC of
    both gate projections at every (padded) position."""
    positions = input_shape[0] * input_shape[1]
    return 2 * positions * w_ih_shape[0] * (w_ih_shape[1] + w_hh_shape[1])


def _mkldnn_rnn_backward_flops(input_shape, w_ih_shape, w_hh_shape, *args, **kwargs) -> int:
    return 2 * _mkldnn_rnn_flops(input_shape, w_ih_shape, w_hh_shape)  # input and weight gradients


CUSTOM_FLOPS = {}
if hasattr(torch.ops.aten, "mkldnn_rnn_layer"):
    CUSTOM_FLOPS[torch.ops.aten.mkldnn_rnn_layer] = _mkldnn_rnn_flops
    CUSTOM_FLOPS[torch.ops.aten.mkldnn_rnn_layer_backward] = _mkldnn_rnn_backward_flops


def training_step_flops(model: Any, batch: dict) -> int:
    """FLOPs of one training step's forward and backward (``model.objective(batch)["loss"]``), counted by torch's
    FlopCounterMode on a model on the CPU (its recurrent layers counted as above; cuDNN's are not known to the
    counter, so count on a CPU copy of a GPU model)."""
    counter = FlopCounterMode(display=False, custom_mapping=CUSTOM_FLOPS)
    with counter:
        model.objective(batch)["loss"].backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops()


def set_tf32(on: bool) -> None:
    """TF32 on or off for CUDA's matrix products and cuDNN (PyTorch allows it in cuDNN by default)."""
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def synchronize(device: torch.device) -> None:
    """Wait for ``device``'s queued work (a no-op on the CPU), so that a host clock times it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_seconds(fn: Callable[[], Any], device: torch.device, repeats: int, warmup: int = 2) -> float:
    """The median wall seconds of ``fn()`` over ``repeats`` calls after ``warmup``, ``device`` synchronised around
    each call."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        synchronize(device)
        t0 = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class LoopTimer(Callback):
    """A run's training loop timed from inside, for benchmarks that run ``train.py``
    (``+callbacks.loop_timer._target_=sentence_lab.benchmarking.LoopTimer +callbacks.loop_timer.output=<json>``):
    seconds from the first training batch's start to the last one's end (data loading between batches included,
    validation after the last batch not), the batches run and the last validation's metrics, written to ``output``
    when fitting ends."""

    def __init__(self, output: str) -> None:
        self.output = Path(output)
        self.first: float | None = None
        self.last: float | None = None
        self.batches = 0
        self.metrics: dict[str, float] = {}

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if self.first is None:
            self.first = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.last = time.perf_counter()
        self.batches += 1

    def on_validation_end(self, trainer, pl_module) -> None:
        if not trainer.sanity_checking:
            self.metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("val/")}

    def on_fit_end(self, trainer, pl_module) -> None:
        seconds = (self.last - self.first) if self.first is not None and self.last is not None else None
        self.output.parent.mkdir(parents=True, exist_ok=True)
        self.output.write_text(json.dumps({"seconds": seconds, "batches": self.batches, "metrics": self.metrics}))


class StepDispatch:
    """What a training loop dispatches a step, counted as a GPU would launch it (``evaluation.dispatch_counts``: the
    recurrent layers' calls one kernel each way): ``start()`` and ``end()`` around each step; steps ``skip`` and
    later are counted, up to ``steps`` of them; ``record()`` the figures a step (kernels, views, host reads and the
    operators most dispatched). Used by :class:`TrainStepDispatch` and by ``benchmarks/infersent_nli.py`` inside
    InferSent's own loop."""

    def __init__(self, steps: int = 4, skip: int = 1) -> None:
        self.steps, self.skip, self.seen = steps, skip, 0
        self.counter = Dispatched()
        self.reads = HostReads()
        self.stack: contextlib.ExitStack | None = None

    def start(self) -> None:
        if self.skip <= self.seen < self.skip + self.steps:
            self.stack = contextlib.ExitStack()
            self.stack.enter_context(self.counter)
            self.stack.enter_context(RecurrentCallsAsOne(self.counter))
            self.stack.enter_context(self.reads)

    def end(self) -> None:
        if self.stack is not None:
            self.stack.close()
            self.stack = None
        self.seen += 1

    def record(self) -> dict[str, Any]:
        n = max(1, min(self.steps, self.seen - self.skip))
        return {"steps_counted": n, "kernels_a_step": round(self.counter.kinds["kernels"] / n, 2),
                "views_a_step": round(self.counter.kinds["views"] / n, 2),
                "host_reads_a_step": round(sum(self.reads.counts.values()) / n, 2),
                "host_reads": dict(self.reads.counts),
                "operators_a_step": {k: round(v / n, 2) for k, v in self.counter.names.most_common(40)
                                     if not k.startswith("metadata")}}


class TrainStepDispatch(Callback):
    """:class:`StepDispatch` around ``train.py``'s training batches (forward, backward, clipping and update: what
    Lightning runs between a batch's start and end), written to ``output`` when fitting ends
    (``+callbacks.step_dispatch._target_=sentence_lab.benchmarking.TrainStepDispatch
    +callbacks.step_dispatch.output=<json>``)."""

    def __init__(self, output: str, steps: int = 4, skip: int = 1) -> None:
        self.output = Path(output)
        self.dispatch = StepDispatch(steps, skip)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.dispatch.start()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.dispatch.end()

    def on_fit_end(self, trainer, pl_module) -> None:
        self.output.parent.mkdir(parents=True, exist_ok=True)
        self.output.write_text(json.dumps(self.dispatch.record()))


Drill = Callable[[Any], tuple[bool | None, str]]


def run_drills(drills: Any, table: list[tuple[str, Drill]], chosen: set[int]) -> list[dict[str, Any]]:
    """The drills of ``table`` numbered in ``chosen`` (all when empty), each on ``drills``: one printed Markdown row
    each (held: yes, **no**, or n/a when it could not run here) and its record. A drill that crashes is a failed
    drill; the rest go on."""
    print("| # | drill | held | seen | s |\n|---|---|---|---|---|")
    rows = []
    for i, (name, drill) in enumerate(table, 1):
        if chosen and i not in chosen:
            continue
        started = time.perf_counter()
        try:
            held, seen = drill(drills)
        except Exception as err:  # noqa: BLE001 - a drill that crashes is a failed drill, the rest go on
            held, seen = False, f"drill crashed: {type(err).__name__}: {err}"
        seconds = time.perf_counter() - started
        mark = "n/a" if held is None else ("yes" if held else "**no**")
        rows.append({"number": i, "drill": name, "held": held, "seen": seen, "seconds": round(seconds, 1)})
        print(f"| {i} | {name} | {mark} | {seen} | {seconds:.0f} |", flush=True)
    ran = [r for r in rows if r["held"] is not None]
    print(f"\n{sum(bool(r['held']) for r in ran)} of {len(ran)} drills held")
    return rows
