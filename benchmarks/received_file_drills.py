"""Drills for issue 59, beside fault_drills.py: files a researcher receives (crafted here from a real checkpoint of the
drilled checkout, never committed) and stop signals sent at the moment each phase of a sweep starts.

    python benchmarks/received_file_drills.py                      # this checkout
    python benchmarks/received_file_drills.py --checkout /tmp/old  # another (a git worktree of an older commit)
    python benchmarks/received_file_drills.py --smoke              # one drill without training, in seconds

Each drill runs the checkout's own ``train.py``, ``evaluate.py``, ``report.py`` or modules in a fresh process and
prints one row: what ran or was written (a marker file a payload touches, a file a ``_target_`` creates, a database
created outside a sweep folder), the exit code and the error line. The signal drills send the signal from inside the
process when the phase starts (this checkout's ``tests/helpers/signal_at.py``, copied beside the drills) and time the
process's end from it. The table goes to a JSON record (``--output``).
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import pickle
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from lib import drills, records
from lib.smoke_inputs import tiny_corpus
from sentence_lab.evaluation.results import git_revision

ROOT = Path(__file__).resolve().parents[1]
HELPER = ROOT / "tests" / "helpers" / "signal_at.py"


class TouchOnUnpickle:
    """Unpickling this touches ``marker`` (a stand-in for ``os.system`` that leaves a trace)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(self.marker),))


class Drills:
    def __init__(self, checkout: Path, work: Path) -> None:
        self.checkout, self.work = checkout, work
        self.corpus = tiny_corpus(work / "corpus")
        helpers = work / "helpers"
        helpers.mkdir()
        shutil.copy(HELPER, helpers / "drill_signal_at.py")
        self.env = dict(os.environ, PROJECT_ROOT=str(checkout), OMP_NUM_THREADS="1",
                        PYTHONPATH=os.pathsep.join([str(helpers), str(checkout)]))
        self.env.pop("SENTENCE_DATA", None)
        self.count = 0
        self._run_dir: Path | None = None

    def fresh(self) -> Path:
        self.count += 1
        folder = self.work / f"d{self.count:02d}"
        folder.mkdir()
        return folder

    def run(self, cmd: list[str], here: Path, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, cwd=here, env=self.env, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def train_args(self, here: Path) -> list[str]:
        return ["encoder=bow", "encoder.embed_dim=8", "encoder.embedding_init=random", "data.batch_size=8",
                "logger=none", "~callbacks.rich_progress_bar", "~callbacks.model_summary", "print_config=false",
                "data.preprocess_workers=0", f"data.train_dir={self.corpus / 'train'}",
                f"data.valid_dir={self.corpus / 'valid'}", f"paths.cache_dir={here / 'cache'}"]

    @staticmethod
    def error_line(stderr: str) -> str:
        lines = [line for line in stderr.splitlines() if line.lower().startswith("error")]
        shown = lines[-1] if lines else (stderr.strip().splitlines() or [""])[-1]
        return ("TRACEBACK; " if "Traceback" in stderr else "") + shown[:160]

    def a_run(self) -> Path:
        """A real run of the drilled checkout (one epoch), made once: the source of every crafted file."""
        if self._run_dir is None:
            here = self.work / "sender"
            here.mkdir()
            done = self.run([sys.executable, str(self.checkout / "train.py"), *self.train_args(here),
                             "~callbacks.eval_suite", "trainer.max_epochs=1", f"hydra.run.dir={here / 'run'}"], here)
            if done.returncode != 0:
                raise RuntimeError(f"the sender's run failed: {done.stderr[-500:]}")
            self._run_dir = here / "run"
        return self._run_dir

    def copy_of_run(self, here: Path) -> Path:
        folder = here / "received"
        shutil.copytree(self.a_run(), folder)
        return folder

    @staticmethod
    def with_payload(source: Path, out: Path, marker: Path) -> Path:
        import torch

        state = torch.load(source, map_location="cpu", weights_only=True)
        state["note"] = TouchOnUnpickle(marker)
        torch.save(state, out)
        return out

    def evaluate(self, here: Path, *overrides: str) -> subprocess.CompletedProcess:
        return self.run([sys.executable, str(self.checkout / "evaluate.py"), *overrides, "tasks=probing",
                         "probing=generated", f"paths.data_dir={here / 'no-data'}",
                         f"results_file={here / 'out' / 'results.json'}"], here)

    @staticmethod
    def outcome(done: subprocess.CompletedProcess, ran: bool, what: str) -> tuple[bool, str]:
        return (not ran and done.returncode != 0,
                f"{what} {'RAN' if ran else 'not run'}; exit {done.returncode}; {Drills.error_line(done.stderr)}")

    # ---- received files ------------------------------------------------------------------------------------------
    def payload_checkpoint_evaluated(self) -> tuple[bool, str]:
        here = self.fresh()
        marker = here / "payload-ran"
        gift = self.with_payload(self.a_run() / "checkpoints" / "best.ckpt", here / "gift.ckpt", marker)
        done = self.evaluate(here, f"ckpt_path={gift}")
        return self.outcome(done, marker.exists(), "payload")

    def payload_last_ckpt_in_a_folder_evaluated(self) -> tuple[bool, str]:
        here = self.fresh()
        marker = here / "payload-ran"
        folder = self.copy_of_run(here)
        (folder / "checkpoints" / "best.ckpt").unlink()
        self.with_payload(self.a_run() / "checkpoints" / "last.ckpt", folder / "checkpoints" / "last.ckpt", marker)
        done = self.evaluate(here, f"ckpt_path={folder}")
        return self.outcome(done, marker.exists(), "payload")

    def payload_resumed(self) -> tuple[bool, str]:
        here = self.fresh()
        marker = here / "payload-ran"
        folder = self.copy_of_run(here)
        self.with_payload(self.a_run() / "checkpoints" / "last.ckpt", folder / "checkpoints" / "last.ckpt", marker)
        done = self.run([sys.executable, str(self.checkout / "train.py"), *self.train_args(here),
                         "~callbacks.eval_suite", "trainer.max_epochs=2", "resume=true", f"hydra.run.dir={folder}"],
                        here)
        return self.outcome(done, marker.exists(), "payload")

    def nested_target_evaluated(self) -> tuple[bool, str]:
        import torch

        here = self.fresh()
        made = here / "made-by-sender"
        state = torch.load(self.a_run() / "checkpoints" / "best.ckpt", map_location="cpu", weights_only=True)
        state["hyper_parameters"]["encoder"]["extra"] = {"_target_": "builtins.open", "_args_": [str(made), "w"]}
        torch.save(state, here / "gift.ckpt")
        done = self.evaluate(here, f"ckpt_path={here / 'gift.ckpt'}")
        return self.outcome(done, made.exists(), "open()")

    def sweep_folder_names_storage_elsewhere(self, url_of: Callable[[Path], str]) -> tuple[bool, str]:
        here = self.fresh()
        sweep = self.copy_of_run(here).parent / "sweep"
        shutil.copytree(self.a_run(), sweep / "0")
        (sweep / "study.yaml").write_text(yaml.safe_dump({"storage": url_of(here), "study_name": "s"}))
        done = self.run([sys.executable, str(self.checkout / "report.py"), str(sweep)], here)
        created = (here / "elsewhere").exists()
        return (not created and "Traceback" not in done.stderr,
                f"outside the folder: {'CREATED' if created else 'nothing'}; exit {done.returncode}; "
                f"{self.error_line(done.stderr) or 'report written'}")

    def sweep_sqlite_elsewhere(self) -> tuple[bool, str]:
        return self.sweep_folder_names_storage_elsewhere(lambda h: f"sqlite:///{h / 'elsewhere' / 'deep' / 'made.db'}")

    def sweep_journal_elsewhere(self) -> tuple[bool, str]:
        return self.sweep_folder_names_storage_elsewhere(lambda h: f"journal:{h / 'elsewhere' / 'deep' / 'made.log'}")

    def pairs_cache_with_payload(self) -> tuple[bool, str]:
        here = self.fresh()
        marker = here / "payload-ran"
        rows = ["premise\thypothesis\tlabel"] + [f"a cat sat {i}\ta dog ran {i}\tentailment" for i in range(40)]
        (here / "nli.tsv").write_text("\n".join(rows) + "\n")
        code = ("from sentence_lab.datamodules.pairs import PairsDataModule\n"
                f"m = PairsDataModule(train={{'format': 'tsv', 'path': {str(here / 'nli.tsv')!r}, 'a': 0, 'b': 1, "
                f"'label': 2, 'header': True}}, cache_dir={str(here / 'cache')!r}, valid_size=5, "
                "labels=['entailment', 'neutral', 'contradiction'])\nm.setup('fit')\nprint(len(m.datasets['train']))")
        first = self.run([sys.executable, "-c", code], here)
        cached = sorted((here / "cache").glob("pairs-*"))
        if first.returncode != 0 or not cached:
            return False, f"no cache made: {self.error_line(first.stderr)}"
        cached[0].write_bytes(pickle.dumps(TouchOnUnpickle(marker)))  # a shared or copied .cache, tampered with
        again = self.run([sys.executable, "-c", code], here)
        return (not marker.exists() and again.returncode == 0,
                f"{cached[0].suffix} cache replaced by a pickle: payload {'RAN' if marker.exists() else 'not run'}; "
                f"exit {again.returncode}")

    def lr_1e37(self) -> tuple[bool, str]:
        here = self.fresh()
        done = self.run([sys.executable, str(self.checkout / "train.py"), *self.train_args(here),
                         "~callbacks.eval_suite", "model.optimizer.lr=1e37", "trainer.max_steps=16",
                         "trainer.max_epochs=16", f"hydra.run.dir={here / 'run'}"], here)
        status = json.loads((here / "run" / "run_status.json").read_text()) \
            if (here / "run" / "run_status.json").is_file() else {}
        return (done.returncode != 0 and status.get("complete") is False,
                f"skipped {status.get('skipped_steps')} of {status.get('steps_done')}; complete "
                f"{status.get('complete')}; exit {done.returncode}; {self.error_line(done.stderr)}")

    # ---- stop signals in a sweep's phases --------------------------------------------------------------------------
    def sweep_signal(self, phase: str, signame: str, *extra: str, launcher: tuple[str, ...] = (),
                     grace_s: float = 0.0) -> tuple[bool, str]:
        """``extra``: the helper's settings (``nth=2``, ``to=parent``); ``launcher``: the sweep's launcher overrides;
        ``grace_s``: seconds the launcher itself waits before it sees a job end (submitit: 15, for a result file on a
        network filesystem), allowed on top of the 10."""
        here = self.fresh()
        senteval = here / "senteval"
        for task in ("sentence_length", "word_content"):
            rows = [f"{split}\t{i % 2}\tthe cat sat on mat {i} ." for split in ("tr", "va", "te") for i in range(40)]
            (senteval / "probing").mkdir(parents=True, exist_ok=True)
            (senteval / "probing" / f"{task}.txt").write_text("\n".join(rows) + "\n")
        cmd = [sys.executable, str(self.checkout / "train.py"), "-m", "hparams_search=qt_optuna",
               "hydra.sweeper.n_trials=2", *self.train_args(here), "trainer.max_epochs=1",
               "trainer.val_check_interval=1.0", f"hydra.sweep.dir={here / 'sweep'}",
               f"callbacks.eval_suite.data_dir={senteval}", "callbacks.eval_suite.tasks=[Length,WordContent]",
               "callbacks.eval_suite.params.l2_grid=[1e-3]", "callbacks.eval_suite.params.max_epoch=4", *launcher]
        signalled = [*cmd, "+hydra.callbacks.signal._target_=drill_signal_at.SignalAtPhase",
                     f"+hydra.callbacks.signal.phase={phase}", f"+hydra.callbacks.signal.signal={signame}",
                     f"+hydra.callbacks.signal.stamp={here / 'signalled'}",
                     *[f"+hydra.callbacks.signal.{e}" for e in extra]]
        done = self.run(signalled, here)
        ended = time.time()
        seconds = ended - float((here / "signalled").read_text()) if (here / "signalled").is_file() else None
        states = self.trial_states(here / "sweep")
        disk = "could not write" in done.stderr
        again = self.run(cmd, here)
        after = self.trial_states(here / "sweep")
        code = 128 + signal.Signals[signame]
        held = (done.returncode == code and seconds is not None and seconds < 10 + grace_s and not disk
                and again.returncode == 0 and after.count("complete") == 2)
        return held, (f"exit {done.returncode} in {seconds:.1f} s; trials {states}; disk error "
                      f"{'REPORTED' if disk else 'none'}; same command again: exit {again.returncode}, trials {after}"
                      if seconds is not None else f"no signal sent; exit {done.returncode}")

    @staticmethod
    def trial_states(sweep: Path) -> list[str]:
        database = sweep / "optuna.db"
        if not database.is_file():
            return []
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
            rows = db.execute("select t.number, t.state, a.value_json from trials t left join trial_user_attributes a "
                              "on a.trial_id = t.trial_id and a.key = 'interrupted_by' order by t.number").fetchall()
        return [state.lower() + (f" ({json.loads(by)})" if by else "") for _, state, by in rows]


def _signal_drill(phase: str, signame: str, *extra: str, launcher: tuple[str, ...] = (), grace_s: float = 0.0
                  ) -> Callable[[Drills], tuple[bool, str]]:
    return lambda drills: drills.sweep_signal(phase, signame, *extra, launcher=launcher, grace_s=grace_s)


JOBLIB = ("hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "hydra.sweeper.n_jobs=2")


DRILLS: list[tuple[str, Callable[[Drills], tuple[bool | None, str]]]] = [
    ("evaluate.py ckpt_path=<a checkpoint with a pickle payload>", Drills.payload_checkpoint_evaluated),
    ("evaluate.py ckpt_path=<a folder whose last.ckpt has one>", Drills.payload_last_ckpt_in_a_folder_evaluated),
    ("train.py resume=true into a folder whose last.ckpt has one", Drills.payload_resumed),
    ("evaluate.py on saved settings with a nested builtins.open", Drills.nested_target_evaluated),
    ("report.py on a sweep whose study.yaml names sqlite elsewhere", Drills.sweep_sqlite_elsewhere),
    ("report.py on a sweep whose study.yaml names a journal elsewhere", Drills.sweep_journal_elsewhere),
    ("a pairs cache replaced by a pickle payload", Drills.pairs_cache_with_payload),
    ("model.optimizer.lr=1e37 on a 16-step run", Drills.lr_1e37),
    ("sweep: SIGTERM inside trial 1's last.ckpt write", _signal_drill("checkpoint", "SIGTERM", "file=last.ckpt",
                                                                      "nth=2")),
    ("sweep: SIGINT inside trial 1's last.ckpt write", _signal_drill("checkpoint", "SIGINT", "file=last.ckpt",
                                                                     "nth=2")),
    ("sweep: SIGTERM as trial 1's suite starts", _signal_drill("suite", "SIGTERM", "nth=3")),
    ("sweep: SIGTERM as trial 0's data preparation starts", _signal_drill("data", "SIGTERM")),
    ("sweep: SIGTERM between trials", _signal_drill("between", "SIGTERM", "nth=2")),
    ("sweep: SIGINT between trials", _signal_drill("between", "SIGINT", "nth=2")),
    ("joblib sweep: SIGTERM to the sweep as its workers write last.ckpt",
     _signal_drill("checkpoint", "SIGTERM", "file=last.ckpt", "to=parent", launcher=JOBLIB)),
    ("submitit_local sweep: SIGTERM to a job as it writes last.ckpt (+15 s: submitit's wait for a result file)",
     _signal_drill("checkpoint", "SIGTERM", "file=last.ckpt", "to=parent", launcher=("hydra/launcher=submitit_local",),
                   grace_s=15.0)),
]
SMOKE = "7"  # the pairs cache: no training run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the project checkout to drill (default: this one)")
    parser.add_argument("--only", default="", help="comma-separated drill numbers (1-based)")
    records.add_options(parser, f"drill {SMOKE} only (no training run)")
    args = parser.parse_args(argv)
    run = records.start("received_file_drills", args, ROOT)
    if args.smoke and not args.only:
        args.only = SMOKE
    chosen = {int(n) for n in args.only.split(",") if n.strip()}
    checkout = args.checkout.resolve()
    print(f"checkout: {checkout} ({git_revision(checkout)})")
    with tempfile.TemporaryDirectory(prefix="received-drills-") as tmp:
        rows = drills.run_drills(Drills(checkout, Path(tmp)), DRILLS, chosen)
    held_count = sum(bool(r["held"]) for r in rows)
    run.write({"checkout": str(checkout), "checkout_revision": git_revision(checkout), "ran": len(rows),
               "held": held_count, "drills": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
