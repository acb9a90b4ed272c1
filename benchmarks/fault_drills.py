"""Fault drills: faults and bad inputs a new user meets, run against a checkout, one line each in a table.

    python benchmarks/fault_drills.py                      # this checkout
    python benchmarks/fault_drills.py --checkout /tmp/old  # another one (e.g. a git worktree of an older commit)
    python benchmarks/fault_drills.py --smoke              # two quick drills (no training), in seconds

Each drill runs the checkout's own ``train.py``, ``evaluate.py`` or modules in a fresh process on a tiny corpus made
here (and SENTENCE_DATA's STS files for the results-file drill), and prints whether the behaviour held. The
full-disk drills mount a small tmpfs (root only; otherwise they are reported as not run). The non-finite step
drills inject their fault with this checkout's ``tests/helpers/non_finite_at.py``; the installed-command drill
builds the checkout's wheel into a fresh environment. The table goes to a JSON record (``--output``, default
``logs/benchmarks/fault_drills/<time>.json``).
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
from collections.abc import Callable
from pathlib import Path

from lib import drills, records
from lib.fresh_environment import CLONE_VARIABLES, files_under, fresh_environment_with
from lib.smoke_inputs import write_corpus
from sentence_lab.evaluation.results import git_revision

ROOT = Path(__file__).resolve().parents[1]
SMOKE_DRILLS = "9,16"  # probing_gen with too little text; the default run's budget (no training in either)


class Drills:
    def __init__(self, checkout: Path, work: Path) -> None:
        self.checkout, self.work = checkout, work
        self.corpus = work / "corpus"
        write_corpus(self.corpus / "train", 3, 40, 0)
        write_corpus(self.corpus / "valid", 1, 24, 1)
        # sentence_lab.* of the drilled checkout first on the path: its sentence_lab/ folder, or, in a checkout of the
        # older layout (the packages at its top, mapped by pyproject), links to them; then this checkout's tests.helpers
        names = checkout
        if not (checkout / "sentence_lab").is_dir():
            names = work / "names"
            (names / "sentence_lab").mkdir(parents=True)
            for folder in ("text", "encoders", "objectives", "datamodules", "training", "evaluation", "adapters",
                           "tools", "cli", "conf", "assets"):
                if (checkout / folder).is_dir():
                    (names / "sentence_lab" / folder).symlink_to(checkout / folder)
        path = os.pathsep.join([str(names), str(checkout), str(ROOT)])
        self.env = dict(os.environ, PROJECT_ROOT=str(checkout), OMP_NUM_THREADS="1", PYTHONPATH=path)
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
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)  # training has begun (the file) and does not end by itself: no moment to wait
        out, err = proc.communicate(timeout=120)
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)

    # ---- the drills: each returns (held, what was seen) -------------------------------------------------------
    @staticmethod
    def small_filesystem(here: Path, size: str) -> Path | None:
        """A tmpfs of ``size`` mounted at ``here/small`` (unmount it after), or None where mounting is not allowed."""
        small = here / "small"
        small.mkdir()
        mounted = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                                                        str(small)], capture_output=True).returncode == 0
        return small if mounted else None

    def full_disk_keeps_last_ckpt(self) -> tuple[bool | None, str]:
        here = self.fresh()
        small = self.small_filesystem(here, "2m")
        if small is None:
            return None, "not run: cannot mount a tmpfs (needs root)"
        code = f"""
import torch
from pathlib import Path
from hydra.utils import instantiate
from omegaconf import OmegaConf
cfg = OmegaConf.load("{self.checkout}/conf/trainer/default.yaml")
io = instantiate(cfg, default_root_dir="/tmp", logger=False, enable_progress_bar=False,
                 _convert_="partial").strategy.checkpoint_io
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
        # every epoch's checkpoint kept (opt-in): the readers must fall back to one of them
        keep = "callbacks=[default,epoch_checkpoints]"
        first = self.run(self.train_cmd(here, "trainer.max_epochs=2", "task_name=t", keep), here)
        if first.returncode != 0:
            return False, f"setup run failed: {first.stderr.strip()[-200:]}"
        (run,) = self.runs(here, "t")
        for name in ("last.ckpt", "best.ckpt"):
            path = run / "checkpoints" / name
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        resumed = self.run(self.train_cmd(here, "trainer.max_epochs=3", "task_name=t", "resume=true", keep), here)
        code = (f"from sentence_lab.checkpoints.choice import resolve_checkpoint; "
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
                return len(runs) == 2, (f"2 runs in the same second -> {len(runs)} run "
                                        f"director{'y' if len(runs) == 1 else 'ies'}")
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
        return (len(tasks) == 5 and a.returncode == 0 and b.returncode == 0,
                f"5 tasks, then 1 more run -> {len(tasks)} in the file")

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
        return (done.returncode == 0 and len(runs) == 1,
                f"exit {done.returncode}; {len(runs)} run directories after resume")

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
        done = self.run([sys.executable, "-m", "sentence_lab.probing_gen", f"corpus={corpus}",
                         f"out={here / 'out'}", "parser=none", "progress=false", "tasks=[Length,BigramShift]",
                         "train=100", "dev=10", "test=10"], here)
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
        return held, (f"train exit {train.returncode}, evaluate exit {evaluate.returncode}; "
                      f"{last[0][:70] if last else ''}")

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
from sentence_lab.training.untrained import untrained_model
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
    from sentence_lab.runs.run_dir import register_resolvers; register_resolvers()
except ImportError:
    pass
with initialize_config_dir(config_dir="{self.checkout}/conf", version_base="1.3"):
    cfg = compose("train")
print(cfg.trainer.max_time, cfg.trainer.max_epochs, cfg.trainer.get("max_steps"))
"""
        done = self.python(code, here)
        seen = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-100:]
        return seen.startswith("None "), f"default run's max_time, max_epochs, max_steps: {seen}"

    # ---- runs that never lie, second round ------------------------------------------------------------------
    def _finite(self, ckpt: Path) -> bool:
        code = (f"import torch; s = torch.load({str(ckpt)!r}, weights_only=False)['state_dict']; "
                "print(all(bool(torch.isfinite(v).all()) for v in s.values() if v.is_floating_point()))")
        return self.python(code, ckpt.parent).stdout.strip().endswith("True")

    def _status(self, run: Path) -> dict:
        status = run / "run_status.json"
        return json.loads(status.read_text()) if status.is_file() else {}

    def _non_finite_step(self, *overrides: str, flags: tuple = ()) -> tuple[subprocess.CompletedProcess, Path | None]:
        here = self.fresh()
        done = self.run(self.train_cmd(here, "trainer.max_steps=12", "trainer.max_epochs=5",
                                       "trainer.val_check_interval=1.0",
                                       "+callbacks.inject._target_=tests.helpers.non_finite_at.NonFiniteLossAt",
                                       *overrides, flags=flags), here)
        runs = self.runs(here)
        return done, runs[0] if runs else None

    def _one_skipped_step(self, value: str, *overrides: str) -> tuple[bool | None, str]:
        done, run = self._non_finite_step(f"+callbacks.inject.value={value}", *overrides)
        if run is None:
            return False, f"exit {done.returncode}; no run"
        last = run / "checkpoints" / "last.ckpt"
        finite = last.is_file() and self._finite(last)
        status = self._status(run)
        held = done.returncode == 0 and finite and status.get("skipped_steps") == 1
        return held, (f"exit {done.returncode}; last.ckpt {'finite' if finite else 'NaN/inf'}; run_status complete="
                      f"{status.get('complete')}, skipped_steps={status.get('skipped_steps', 'not recorded')}")

    def nan_step_skipped(self) -> tuple[bool | None, str]:
        return self._one_skipped_step("nan", "+callbacks.inject.steps=[4]")

    def inf_step_skipped(self) -> tuple[bool | None, str]:
        return self._one_skipped_step("inf", "+callbacks.inject.steps=[4]")

    def nan_steps_in_a_row_stop(self) -> tuple[bool | None, str]:
        done, run = self._non_finite_step("+callbacks.inject.from_step=4",
                                          "++callbacks.non_finite_steps.max_in_a_row=3")
        saved = run / "checkpoints" / "interrupted.ckpt" if run else None
        finite = bool(saved and saved.is_file() and self._finite(saved))
        status = self._status(run) if run else {}
        held = done.returncode == 1 and self.one_line(done.stderr, "non-finite") and finite and \
            status.get("stopped_by") == "non_finite_steps"
        return held, (f"exit {done.returncode}; {'one line' if self.one_line(done.stderr) else 'no one-line error'}; "
                      f"interrupted.ckpt {'finite' if finite else 'missing or NaN'}; run_status stopped_by="
                      f"{status.get('stopped_by')}, complete={status.get('complete')}")

    def nan_step_on_one_ddp_rank(self) -> tuple[bool | None, str]:
        done, run = self._non_finite_step("trainer=ddp_cpu", "trainer.strategy.timeout.seconds=60",
                                          "+callbacks.inject.steps=[2]", "+callbacks.inject.ranks=[1]")
        if run is None:
            return False, f"exit {done.returncode}; no run"
        last = run / "checkpoints" / "last.ckpt"
        finite = last.is_file() and self._finite(last)
        status = self._status(run)
        return done.returncode == 0 and finite and status.get("skipped_steps") == 1, \
            (f"2 ranks, NaN on rank 1 at step 2: exit {done.returncode}; "
             f"last.ckpt {'finite' if finite else 'NaN/inf'}; "
             f"skipped_steps={status.get('skipped_steps', 'not recorded')}")

    def _files(self, folder: Path) -> dict[str, bytes]:
        return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}

    def fresh_run_in_another_runs_dir(self) -> tuple[bool | None, str]:
        here = self.fresh()
        run = here / "bow_run"
        self.run(self.train_cmd(here, "trainer.max_steps=2", f"hydra.run.dir={run}"), here)
        before = self._files(run)
        done = self.run(self.train_cmd(here, "encoder=gru", f"hydra.run.dir={run}"), here)
        kept = self._files(run) == before
        return done.returncode == 1 and self.one_line(done.stderr, "already holds a run") and kept, \
            f"exit {done.returncode}; {'one line' if self.one_line(done.stderr) else 'no refusal'}; the run's files " \
            f"{'unchanged' if kept else 'changed: '}" \
            f"{'' if kept else ', '.join(sorted(set(self._files(run)) ^ set(before))) or 'rewritten'}"

    def resume_with_another_model(self) -> tuple[bool | None, str]:
        here = self.fresh()
        run = here / "bow_run"
        self.run(self.train_cmd(here, "trainer.max_steps=2", f"hydra.run.dir={run}"), here)
        before = self._files(run)
        done = self.run(self.train_cmd(here, "encoder.embed_dim=16", f"ckpt_path={run / 'checkpoints' / 'last.ckpt'}",
                                       "trainer.max_steps=4"), here)
        kept = self._files(run) == before
        return done.returncode == 1 and self.one_line(done.stderr, "encoder.embed_dim") and kept, \
            f"exit {done.returncode}; {self._last_error(done.stderr).split('settings: ')[-1][:70]}; the run's files " \
            f"{'unchanged' if kept else 'changed'}"

    @staticmethod
    def _last_error(stderr: str) -> str:
        lines = [line for line in stderr.splitlines() if line.strip()]
        error = [line for line in lines if line.startswith("error")]
        return (error or lines or [""])[-1]

    def installed_command_writes_here(self) -> tuple[bool | None, str]:
        here = self.fresh()
        built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", str(self.checkout), "--no-deps",
                                "--no-build-isolation", "-w", str(here / "dist")], capture_output=True, text=True,
                               timeout=600, cwd=here)
        wheels = list((here / "dist").glob("*.whl"))
        if built.returncode or not wheels:
            return False, f"wheel not built: {built.stderr.strip()[-100:]}"
        env_dir = here / "env"
        site = fresh_environment_with(wheels[0], env_dir)
        before = files_under(site)
        work = here / "work"
        work.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in CLONE_VARIABLES}
        done = subprocess.run([str(env_dir / "bin" / "sentence-lab-train"), "encoder=bow", "encoder.embed_dim=8",
                               "encoder.embedding_init=random", "trainer.max_steps=2", "~callbacks.eval_suite",
                               "logger=none", "print_config=false", "test_after_fit=false"],
                              cwd=work, env=dict(env, OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=600)
        after = files_under(site)
        inside = sorted({Path(p).parts[1] if len(Path(p).parts) > 1 else p for p in after - before})
        here_top = sorted({p.relative_to(work).parts[0] for p in work.rglob("*") if p.is_file()})
        return done.returncode == 0 and not inside and "logs" in here_top, \
            (f"exit {done.returncode}; written in the run's directory: {', '.join(here_top) or 'nothing'}; "
             f"in site-packages/sentence_lab: {', '.join(inside) or 'nothing'}")

    def evaluate_on_a_full_disk(self) -> tuple[bool | None, str]:
        here = self.fresh()
        small = self.small_filesystem(here, "1m")
        if small is None:
            return None, "not run: cannot mount a tmpfs (needs root)"
        try:
            out = small / "results.json"
            cmd = [sys.executable, str(self.checkout / "evaluate.py"), "encoder=bow_glove", "probing=generated",
                   f"results_file={out}", f"paths.log_dir={here / 'logs'}"]
            self.run(cmd + ["tasks=[Length]"], here)
            kept = out.read_bytes() if out.is_file() else b""
            stat = os.statvfs(small)
            with open(small / "filler", "wb") as f:
                f.write(b"\0" * (stat.f_bavail * stat.f_frsize))
            done = self.run(cmd + ["tasks=[Length,WordContent]"], here)
            whole = bool(kept) and out.read_bytes() == kept
        finally:
            subprocess.run(["umount", str(small)], capture_output=True)
        lines = len(done.stderr.strip().splitlines())
        return done.returncode == 4 and self.one_line(done.stderr, "results.json", "No space left") and whole, \
            f"exit {done.returncode}; stderr {lines} line(s); old results {'whole' if whole else 'lost'}"


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
    ("NaN loss at step 4 of 12", Drills.nan_step_skipped),
    ("inf loss at step 4 of 12", Drills.inf_step_skipped),
    ("NaN loss from step 4 on, 3 allowed in a row", Drills.nan_steps_in_a_row_stop),
    ("NaN loss on one of two DDP ranks", Drills.nan_step_on_one_ddp_rank),
    ("a fresh run in another run's directory", Drills.fresh_run_in_another_runs_dir),
    ("resume with another embedding size", Drills.resume_with_another_model),
    ("the installed command run from a temporary directory", Drills.installed_command_writes_here),
    ("evaluate.py with its results file on a full disk", Drills.evaluate_on_a_full_disk),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the project checkout to drill (default: this one)")
    parser.add_argument("--only", default="", help="comma-separated drill numbers (1-based)")
    records.add_options(parser, f"drills {SMOKE_DRILLS} only (no training run)")
    args = parser.parse_args(argv)
    run = records.start("fault_drills", args, ROOT)
    if args.smoke and not args.only:
        args.only = SMOKE_DRILLS
    chosen = {int(n) for n in args.only.split(",") if n.strip()}
    checkout = args.checkout.resolve()
    print(f"checkout: {checkout}")
    with tempfile.TemporaryDirectory(prefix="drills-") as tmp:
        rows = drills.run_drills(Drills(checkout, Path(tmp)), DRILLS, chosen)
    ran = sum(r["held"] is not None for r in rows)
    held_count = sum(bool(r["held"]) for r in rows)
    run.write({"checkout": str(checkout), "checkout_revision": git_revision(checkout), "ran": ran,
               "held": held_count, "drills": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
