"""Fault drills: the faults and bad inputs of issue 19, run against a checkout, one line each in a table.

    python benchmarks/fault_drills.py                      # this checkout
    python benchmarks/fault_drills.py --checkout /tmp/old  # another one (e.g. a git worktree of an older commit)
    python benchmarks/fault_drills.py --smoke              # two quick drills (no training), in seconds

Each drill runs the checkout's own ``train.py``, ``evaluate.py`` or modules in a fresh process on a tiny corpus made
here (and SENTENCE_DATA's STS files for the results-file drill), and prints whether the behaviour held. The
full-disk drill mounts a 2 MB tmpfs (root only; otherwise it is reported as not run). The table goes to a JSON
record (``--output``, default ``logs/benchmarks/fault_drills/<time>.json``).
"""
from __future__ import annotations

import argparse
import json
import lzma
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from sentence_lab.evaluation.results import git_revision
from sentence_lab.tools import benchmark
from sentence_lab.tools.benchmark import write_corpus

ROOT = Path(__file__).resolve().parents[1]
SMOKE_DRILLS = "9,16"  # probing_gen with too little text; the default run's budget (no training in either)


class Drills:
    def __init__(self, checkout: Path, work: Path) -> None:
        self.checkout, self.work = checkout, work
        self.corpus = work / "corpus"
        write_corpus(self.corpus / "train", 3, 40, 0)
        write_corpus(self.corpus / "valid", 1, 24, 1)
        self.env = dict(os.environ, PROJECT_ROOT=str(checkout), OMP_NUM_THREADS="1", PYTHONPATH=str(checkout))
        self.count = 0

    def fresh(self) -> Path:
        self.count += 1
        folder = self.work / f"d{self.count:02d}"
        folder.mkdir()
        return folder

    def train_cmd(self, here: Path, *overrides: str, corpus: Path | None = None, flags: tuple = ()) -> list[str]:
        corpus = corpus or self.corpus
        return [sys.executable, str(self.checkout / "train.py"), *flags, "encoder=bow", "encoder.embed_dim=8",
                "encoder.embedding_init=random", "data.batch_size=8", "logger=none", "~callbacks.eval_suite",
                "~callbacks.rich_progress_bar", "~callbacks.model_summary", "print_config=false",
                "data.preprocess_workers=0", f"data.train_dir={corpus / 'train'}", f"data.valid_dir={corpus / 'valid'}",
                f"paths.cache_dir={here / 'cache'}", f"paths.log_dir={here / 'logs'}", *overrides]

    def run(self, cmd: list[str], here: Path, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, cwd=here, env=self.env, capture_output=True, text=True, timeout=timeout)

    def python(self, code: str, here: Path) -> subprocess.CompletedProcess:
        return self.run([sys.executable, "-c", code], here)

    @staticmethod
    def runs(here: Path, task: str = "train") -> list[Path]:
        folder = here / "logs" / task / "runs"
        return sorted(folder.iterdir()) if folder.is_dir() else []

    @staticmethod
    def one_line(stderr: str, *needles: str) -> bool:
        errors = [line for line in stderr.splitlines() if line.lower().startswith("error")]
        return "Traceback" not in stderr and len(errors) == 1 and all(n in errors[0] for n in needles)

    def signalled(self, cmd: list[str], here: Path, wait_for: str) -> subprocess.CompletedProcess:
        proc = subprocess.Popen(cmd, cwd=here, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while not list(here.glob(wait_for)) and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)

    # ---- the drills: each returns (held, what was seen) -------------------------------------------------------
    def full_disk_keeps_last_ckpt(self) -> tuple[bool | None, str]:
        here = self.fresh()
        small = here / "small"
        small.mkdir()
        if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(small)],
                                               capture_output=True).returncode != 0:
            return None, "not run: cannot mount a tmpfs (needs root)"
        code = f"""
import torch
from pathlib import Path
from hydra.utils import instantiate
from omegaconf import OmegaConf
cfg = OmegaConf.load("{self.checkout}/conf/trainer/default.yaml")
io = instantiate(cfg, default_root_dir="/tmp", logger=False, enable_progress_bar=False, _convert_="partial").strategy.checkpoint_io
small = Path("{small}")
io.save_checkpoint({{"state_dict": {{"w": torch.ones(100000)}}}}, small / "last.ckpt")
good = (small / "last.ckpt").read_bytes()
(small / "other").write_bytes(b"0" * (2 * 1024 * 1024 - len(good) - 100 * 1024))
try:
    io.save_checkpoint({{"state_dict": {{"w": torch.ones(150000)}}}}, small / "last.ckpt")
except Exception as err:
    print("raised", type(err).__name__)
now = (small / "last.ckpt").read_bytes()
print("whole" if now == good else f"corrupted: {{len(now)}} bytes where {{len(good)}} were")
"""
        try:
            done = self.python(code, here)
        finally:
            subprocess.run(["umount", str(small)], capture_output=True)
        seen = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()[-200:]
        return seen == "whole", f"last.ckpt {seen}"

    def readers_skip_unreadable(self) -> tuple[bool | None, str]:
        here = self.fresh()
        first = self.run(self.train_cmd(here, "trainer.max_epochs=2", "task_name=t"), here)
        if first.returncode != 0:
            return False, f"setup run failed: {first.stderr.strip()[-200:]}"
        (run,) = self.runs(here, "t")
        for name in ("last.ckpt", "best.ckpt"):
            path = run / "checkpoints" / name
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        resumed = self.run(self.train_cmd(here, "trainer.max_epochs=3", "task_name=t", "resume=true"), here)
        code = (f"from sentence_lab.training.checkpoint_choice import resolve_checkpoint; "
                f"print(resolve_checkpoint('{run}').name)")
        resolved = self.python(code, here)
        held = resumed.returncode == 0 and resolved.returncode == 0
        return held, (f"resume=true exit {resumed.returncode}; run-dir resolver gave "
                      f"{resolved.stdout.strip() or resolved.stderr.strip().splitlines()[-1][:80]}")

    def same_second_runs(self) -> tuple[bool | None, str]:
        for _ in range(4):
            here = self.fresh()
            procs = [subprocess.Popen(self.train_cmd(here, "++trainer.fast_dev_run=true"), cwd=here, env=self.env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]
            for p in procs:
                p.wait(timeout=300)
            runs = self.runs(here)
            stamps = {r.name[:19] for r in runs}
            if len(runs) == 1 or len(stamps) == 1:  # both started in the same second
                return len(runs) == 2, f"2 runs in the same second -> {len(runs)} run director{'y' if len(runs) == 1 else 'ies'}"
        return None, "not run: the two starts never fell in the same second"

    def results_file_kept(self) -> tuple[bool | None, str]:
        data = Path(os.environ.get("SENTENCE_DATA", ""))
        if not (data / "senteval" / "STS").is_dir():
            return None, "not run: needs SENTENCE_DATA (STS tasks)"
        here = self.fresh()
        out = here / "r.json"
        cmd = [sys.executable, str(self.checkout / "evaluate.py"), "encoder=bow_glove", f"results_file={out}",
               f"paths.log_dir={here / 'logs'}"]
        a = self.run(cmd + ["tasks=[STS12,STS13,STS14,STS15,STS16]"], here)
        b = self.run(cmd + ["tasks=[STS12]"], here)
        tasks = sorted(json.loads(out.read_text()).get("results", {})) if out.is_file() else []
        return len(tasks) == 5 and a.returncode == 0 and b.returncode == 0, f"5 tasks, then 1 more run -> {len(tasks)} in the file"

    def failed_ckpt_start_leaves_nothing(self) -> tuple[bool | None, str]:
        here = self.fresh()
        fake = here / "notes.txt"
        fake.write_text("hello\n")
        done = self.run(self.train_cmd(here, f"ckpt_path={fake}"), here)
        left = [p.name for p in (here / "logs").rglob("*.ckpt")] if (here / "logs").is_dir() else []
        return not left, f"exit {done.returncode}; checkpoints left: {left or 'none'}"

    def resume_leaves_no_stub(self) -> tuple[bool | None, str]:
        here = self.fresh()
        self.run(self.train_cmd(here, "trainer.max_epochs=1", "task_name=t"), here)
        done = self.run(self.train_cmd(here, "trainer.max_epochs=2", "task_name=t", "resume=true"), here)
        runs = self.runs(here, "t")
        return done.returncode == 0 and len(runs) == 1, f"exit {done.returncode}; {len(runs)} run directories after resume"

    def sigterm_exit_code(self) -> tuple[bool | None, str]:
        here = self.fresh()
        done = self.signalled(self.train_cmd(here, "trainer.max_epochs=100000"), here,
                              "logs/train/runs/*/checkpoints/init.ckpt")
        saved = list(here.rglob("interrupted.ckpt"))
        return done.returncode == 128 + signal.SIGTERM and bool(saved), \
            f"exit {done.returncode}; interrupted.ckpt {'written' if saved else 'missing'}"

    def sigterm_in_multirun(self) -> tuple[bool | None, str]:
        here = self.fresh()
        sweep = here / "sweep"
        done = self.signalled(self.train_cmd(here, "seed=1,2", "trainer.max_epochs=100000", f"hydra.sweep.dir={sweep}",
                                             flags=("-m",)), here, "sweep/0/checkpoints/init.ckpt")
        record = sweep / "failed_jobs.jsonl"
        named = record.is_file() and "SIGTERM" in record.read_text()
        return done.returncode == 128 + signal.SIGTERM and named, \
            f"exit {done.returncode}; failed_jobs.jsonl {'names SIGTERM' if named else 'has no record'}"

    def probing_gen_too_little_text(self) -> tuple[bool | None, str]:
        here = self.fresh()
        corpus = here / "c"
        corpus.mkdir()
        (corpus / "a.txt").write_text("The old man saw the red river today.\n\nA young woman walked over the bridge.\n")
        done = self.run([sys.executable, "-m", "sentence_lab.tools.probing_gen", f"corpus={corpus}", f"out={here / 'out'}",
                         "parser=none", "progress=false", "tasks=[Length,BigramShift]", "train=100", "dev=10",
                         "test=10"], here)
        written = [p.name for p in (here / "out").glob("*.txt")]
        return done.returncode != 0 and not written, f"exit {done.returncode}; task files written: {written or 'none'}"

    def batch_size_abc(self) -> tuple[bool | None, str]:
        here = self.fresh()
        done = self.run(self.train_cmd(here, "data.batch_size=abc"), here)
        read = (here / "cache").exists()
        return done.returncode != 0 and self.one_line(done.stderr, "data.batch_size") and not read, \
            f"exit {done.returncode}; {'one line' if self.one_line(done.stderr) else 'traceback'}; " \
            f"corpus {'read first' if read else 'not read'}"

    def text_as_checkpoint(self) -> tuple[bool | None, str]:
        here = self.fresh()
        fake = here / "notes.txt"
        fake.write_text("hello\n")
        train = self.run(self.train_cmd(here, f"ckpt_path={fake}"), here)
        evaluate = self.run([sys.executable, str(self.checkout / "evaluate.py"), f"ckpt_path={fake}", "tasks=[Length]",
                             "probing=generated", f"paths.log_dir={here / 'logs'}"], here)
        held = self.one_line(train.stderr, "not a checkpoint") and "not a checkpoint" in evaluate.stderr \
            and "Traceback" not in evaluate.stderr
        last = [line for line in (train.stderr + evaluate.stderr).splitlines() if line.strip()][-1:]
        return held, f"train exit {train.returncode}, evaluate exit {evaluate.returncode}; {last[0][:70] if last else ''}"

    def _corpus_with(self, here: Path, name: str, content: bytes) -> Path:
        corpus = here / "corpus"
        write_corpus(corpus / "train", 3, 40, 0)
        write_corpus(corpus / "valid", 1, 24, 1)
        (corpus / "train" / name).write_bytes(content)
        return corpus

    def corrupt_xz_named(self) -> tuple[bool | None, str]:
        here = self.fresh()
        corpus = self._corpus_with(here, "broken.txt.xz", lzma.compress(b"x" * 1000)[:40])
        done = self.run(self.train_cmd(here, "++trainer.fast_dev_run=true", corpus=corpus), here)
        return done.returncode != 0 and self.one_line(done.stderr, "broken.txt.xz"), \
            f"exit {done.returncode}; file {'named' if 'broken.txt.xz' in done.stderr else 'not named'}"

    def binary_corpus_refused(self) -> tuple[bool | None, str]:
        here = self.fresh()
        corpus = here / "garbage"
        for split in ("train", "valid"):
            (corpus / split).mkdir(parents=True)
            (corpus / split / "g.txt").write_bytes(random.Random(0).randbytes(50_000))
        done = self.run(self.train_cmd(here, "trainer.max_epochs=1", corpus=corpus), here)
        return done.returncode != 0 and "not text" in done.stderr, f"exit {done.returncode}"

    def small_corpus_warned(self) -> tuple[bool | None, str]:
        here = self.fresh()
        done = self.run(self.train_cmd(here, "++trainer.fast_dev_run=true", "data.batch_size=32"), here)
        said = "fewer than 10 batches" in done.stdout + done.stderr
        return said, f"exit {done.returncode}; {'warned with the numbers' if said else 'no warning'}"

    def encode_a_string(self) -> tuple[bool | None, str]:
        here = self.fresh()
        code = """
from collections import Counter
from sentence_lab.training.module import untrained_model
from sentence_lab.text import Tokenizer, Vocab
m = untrained_model({"_target_": "sentence_lab.encoders.bilstm.BiLSTMMaxEncoder", "embed_dim": 8, "hidden_dim": 8,
                     "embedding_init": "random"}, Vocab.build(Counter({"one": 1, "sentence": 1})), Tokenizer())
print(tuple(m.encode("one sentence").shape))
"""
        done = self.python(code, here)
        shape = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "error"
        return shape == "(16,)", f"encode('one sentence') -> shape {shape}"

    def default_run_is_fixed_work(self) -> tuple[bool | None, str]:
        here = self.fresh()
        code = f"""
from hydra import compose, initialize_config_dir
try:
    from sentence_lab.training.run_dir import register_resolvers; register_resolvers()
except ImportError:
    pass
with initialize_config_dir(config_dir="{self.checkout}/conf", version_base="1.3"):
    cfg = compose("train")
print(cfg.trainer.max_time, cfg.trainer.max_epochs, cfg.trainer.get("max_steps"))
"""
        done = self.python(code, here)
        seen = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-100:]
        return seen.startswith("None "), f"default run's max_time, max_epochs, max_steps: {seen}"


DRILLS: list[tuple[str, Callable[[Drills], tuple[bool | None, str]]]] = [
    ("full disk while last.ckpt is rewritten", Drills.full_disk_keeps_last_ckpt),
    ("resume / evaluate skip an unreadable checkpoint", Drills.readers_skip_unreadable),
    ("two runs started in the same second", Drills.same_second_runs),
    ("evaluate.py into an existing results_file", Drills.results_file_kept),
    ("failed ckpt_path= start", Drills.failed_ckpt_start_leaves_nothing),
    ("resume=true leaves no stub directory", Drills.resume_leaves_no_stub),
    ("SIGTERM exit code", Drills.sigterm_exit_code),
    ("SIGTERM in a multirun is recorded", Drills.sigterm_in_multirun),
    ("probing_gen with too little text", Drills.probing_gen_too_little_text),
    ("data.batch_size=abc", Drills.batch_size_abc),
    ("a text file as ckpt_path (train, evaluate)", Drills.text_as_checkpoint),
    ("corrupt .txt.xz document", Drills.corrupt_xz_named),
    ("binary garbage as corpus", Drills.binary_corpus_refused),
    ("corpus under ten batches", Drills.small_corpus_warned),
    ('SentenceModel.encode("one sentence")', Drills.encode_a_string),
    ("default run is a fixed amount of work", Drills.default_run_is_fixed_work),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the project checkout to drill (default: this one)")
    parser.add_argument("--only", default="", help="comma-separated drill numbers (1-based)")
    benchmark.add_options(parser, f"drills {SMOKE_DRILLS} only (no training run)")
    args = parser.parse_args(argv)
    run = benchmark.start("fault_drills", args, ROOT)
    if args.smoke and not args.only:
        args.only = SMOKE_DRILLS
    chosen = {int(n) for n in args.only.split(",") if n.strip()}
    checkout = args.checkout.resolve()
    print(f"checkout: {checkout}")
    print("| # | drill | held | seen | s |\n|---|---|---|---|---|")
    held_count = ran = 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="drills-") as tmp:
        drills = Drills(checkout, Path(tmp))
        for i, (name, drill) in enumerate(DRILLS, 1):
            if chosen and i not in chosen:
                continue
            started = time.perf_counter()
            try:
                held, seen = drill(drills)
            except Exception as err:  # noqa: BLE001 - a drill that crashes is a failed drill, the rest go on
                held, seen = False, f"drill crashed: {type(err).__name__}: {err}"
            mark = "n/a" if held is None else ("yes" if held else "**no**")
            ran += held is not None
            held_count += bool(held)
            seconds = time.perf_counter() - started
            rows.append({"number": i, "drill": name, "held": held, "seen": seen, "seconds": round(seconds, 1)})
            print(f"| {i} | {name} | {mark} | {seen} | {seconds:.0f} |", flush=True)
    print(f"\n{held_count} of {ran} drills held")
    run.write({"checkout": str(checkout), "checkout_revision": git_revision(checkout), "ran": ran,
               "held": held_count, "drills": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
