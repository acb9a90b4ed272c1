"""Does pruning pay? The same Optuna sweep with and without pruning, a sweep killed and resumed, a DDP trial pruned.

    python benchmarks/pruned_sweep.py                       # 12 QT trials x 2 epochs, twice; the resume; the DDP trial
    python benchmarks/pruned_sweep.py --parts resume,ddp    # some of it
    python benchmarks/pruned_sweep.py --smoke               # 2 tiny trials on a made-up corpus and made-up tasks

1. **unpruned / pruned**: ``hparams_search=qt_optuna`` (learning rate, temperature, batch size; TPE, sampler seed
   1234) for ``--trials`` trials of 2 epochs on the first ``--max-train-sentences`` sentences of the shipped books,
   maximising the shipped probing set's mean (the per-epoch suite on ``[probing]``, the set generated from the books:
   no download); once with ``hydra/sweeper/pruner=none`` and once with the median pruner. Printed: wall time,
   trials pruned (and after which epoch), the best trial's score and parameters, and each trial's reports.
2. **resume**: a pruned sweep of ``--resume-trials`` trials killed with SIGKILL (the whole process group, as a lost
   node) ``--kill-after-s`` seconds after its second trial's run wrote ``init.ckpt`` (its training has begun: the
   kill waits for that file, not for a time a busy machine moves; 0 in the smoke run), then the same command
   again: no finished trial is repeated, the killed trial is re-run with its parameters once its heartbeat is
   stale, and the study ends with the budget.
3. **ddp**: one trial under ``trainer=ddp_cpu`` (2 processes) with a threshold no score reaches, so the pruner stops
   it after epoch 1: both ranks stop, exit 0, ``jobs.jsonl`` says pruned and ``failed_jobs.jsonl`` is absent.

Each part's sweep directory is under ``--out`` (default ``logs/benchmarks/pruned_sweep/<time>/``); ``report.py`` is
run on the two sweeps (``study.md``, ``optuna_*.png``). The figures go to a JSON record (``--output``).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from lib import records, smoke_inputs
from sentence_lab.checkpoints.choice import INIT_NAME
from sentence_lab.optuna_storage import PRUNED_AT, RETRY_OF, load_recorded_study

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("unpruned", "pruned", "resume", "ddp")


def sweep_command(sweep_dir: Path, study: str, trials: int, args: argparse.Namespace, *extra: str) -> list[str]:
    """``train.py -m hparams_search=qt_optuna`` into ``sweep_dir`` with study ``study``."""
    common = [sys.executable, str(ROOT / "train.py"), "-m", "hparams_search=qt_optuna", f"hydra.sweep.dir={sweep_dir}",
              f"hydra.sweeper.study_name={study}", f"hydra.sweeper.n_trials={trials}", "print_config=false",
              "logger=tensorboard", "test_after_fit=false"]
    if args.smoke:
        data = smoke_inputs.tiny_senteval(smoke_inputs.tiny_corpus(args.out / "smoke_data", sentences=60))
        common += ["encoder=bow", "encoder.embed_dim=16", "encoder.embedding_init=random",
                   f"data.train_dir={data / 'train'}", f"data.valid_dir={data / 'valid'}",
                   "data.batch_size=choice(8,16)", "trainer.val_check_interval=1.0",
                   f"callbacks.eval_suite.data_dir={data}", "callbacks.eval_suite.tasks=[MR,TREC]",
                   "optimized_metric=transfer/mean", "callbacks.eval_suite.params.max_epoch=4"]
    else:  # the shipped probing set: an empty data_dir leaves the suite nothing else to find
        empty = args.out / "no_task_data"
        empty.mkdir(parents=True, exist_ok=True)
        common += [f"data.max_train_sentences={args.max_train_sentences}", "callbacks.eval_suite.tasks=[probing]",
                   f"callbacks.eval_suite.data_dir={empty}"]
    return common + list(extra)


def run_sweep(cmd: list[str], log: Path, expect: int = 0) -> float:
    started = time.perf_counter()
    with open(log, "w") as out:
        code = subprocess.run(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env()).returncode
    if code != expect:
        raise SystemExit(f"{' '.join(cmd)} exited {code} (expected {expect}): see {log}")
    return time.perf_counter() - started


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "SENTENCE_DATA"} | {"PYTHONPATH": str(ROOT)}


def trial_rows(study: optuna.Study) -> list[dict[str, Any]]:
    return [{"trial": t.number, "state": t.state.name.lower(), "value": t.value if len(study.directions) == 1 else
             t.values, "pruned_after_epoch": t.user_attrs.get(PRUNED_AT), "retry_of": t.user_attrs.get(RETRY_OF),
             "reports": {str(e): round(v, 3) for e, v in sorted(t.intermediate_values.items())},
             "params": t.params, "seconds": round(t.duration.total_seconds(), 1) if t.duration else None}
            for t in study.get_trials(deepcopy=False)]


def summary(study: optuna.Study, seconds: float) -> dict[str, Any]:
    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    best = study.best_trial if complete else None
    return {"wall_seconds": round(seconds, 1), "trials": len(trials),
            "complete": len(complete), "pruned": sum(t.state == TrialState.PRUNED for t in trials),
            "failed": sum(t.state == TrialState.FAIL for t in trials),
            "best_trial": best.number if best else None, "best_value": best.value if best else None,
            "best_params": best.params if best else None, "per_trial": trial_rows(study)}


def compare(args: argparse.Namespace, results: dict[str, Any]) -> None:
    for part, pruner in (("unpruned", "none"), ("pruned", "median")):
        if part not in args.parts:
            continue
        sweep_dir = args.out / part
        seconds = run_sweep(sweep_command(sweep_dir, f"bench_{part}", args.trials, args,
                                          f"hydra/sweeper/pruner={pruner}"), args.out / f"{part}.log")
        study = load_recorded_study(sweep_dir)
        assert study is not None
        results[part] = summary(study, seconds)
        subprocess.run([sys.executable, str(ROOT / "report.py"), str(sweep_dir)], cwd=ROOT, env=env(),
                       capture_output=True, check=False)
        r = results[part]
        print(f"{part}: {r['wall_seconds']:.0f} s, {r['complete']} complete, {r['pruned']} pruned, {r['failed']} "
              f"failed; best trial {r['best_trial']}: {r['best_value']} with {r['best_params']}", flush=True)
        for row in r["per_trial"]:
            print(f"  trial {row['trial']}: {row['state']}"
                  + (f" after epoch {row['pruned_after_epoch']}" if row["pruned_after_epoch"] is not None else "")
                  + f", reports {row['reports']}, {row['seconds']} s, {row['params']}", flush=True)
    if {"unpruned", "pruned"} <= set(results):
        ratio = results["pruned"]["wall_seconds"] / results["unpruned"]["wall_seconds"]
        results["pruned_over_unpruned_wall"] = round(ratio, 3)
        print(f"pruned / unpruned wall time: {ratio:.3f}", flush=True)


def wait_for_training(sweep_dir: Path, job: int, proc: subprocess.Popen, timeout_s: float) -> None:
    """Return once job ``job``'s run has written ``init.ckpt`` (its trial is created, its heartbeat recorded and
    its training begun), polling every 20 ms; exit if the sweep ends first or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    marker = sweep_dir / str(job) / "checkpoints" / INIT_NAME
    while not marker.is_file():
        if proc.poll() is not None:
            raise SystemExit(f"the sweep ended (exit {proc.returncode}) before job {job} trained: see {sweep_dir}")
        if time.monotonic() > deadline:
            raise SystemExit(f"job {job} did not start training within {timeout_s:.0f} s: see {sweep_dir}")
        time.sleep(0.02)


def resume(args: argparse.Namespace, results: dict[str, Any]) -> None:
    sweep_dir = args.out / "resume"
    cmd = sweep_command(sweep_dir, "bench_resume", args.resume_trials, args, f"hydra.sweeper.heartbeat_interval="
                        f"{args.heartbeat_s}", f"hydra.sweeper.grace_period={args.grace_s}")
    with open(args.out / "resume_killed.log", "w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env(), start_new_session=True)
        wait_for_training(sweep_dir, 1, proc, 1800)
        time.sleep(args.kill_after_s)  # further into the second trial's training (0: at once)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    study = load_recorded_study(sweep_dir)
    assert study is not None
    before = {t.number: (t.state.name, t.params, t.value) for t in study.get_trials(deepcopy=False)}
    running = [n for n, (state, _, _) in before.items() if state == "RUNNING"]
    print(f"resume: killed (SIGKILL) with trials {before and {n: s for n, (s, _, _) in before.items()}}", flush=True)
    seconds = run_sweep(cmd, args.out / "resume_again.log")
    study = load_recorded_study(sweep_dir)
    assert study is not None
    after = study.get_trials(deepcopy=False)
    finished_before = {n for n, (state, _, _) in before.items() if state in ("COMPLETE", "PRUNED")}
    kept = all((after[n].state.name, after[n].params, after[n].value) == before[n] for n in finished_before)
    reruns = {t.user_attrs[RETRY_OF]: t.number for t in after if RETRY_OF in t.user_attrs}
    repeated = [t.number for t in after if t.number not in finished_before and RETRY_OF not in t.user_attrs
                and any(t.params == after[n].params for n in finished_before)]
    results["resume"] = {"killed_running": running, "finished_before_kill": sorted(finished_before),
                         "finished_trials_unchanged": kept, "reruns": reruns, "trials_repeating_a_finished_one":
                         repeated, "second_command_seconds": round(seconds, 1), "per_trial": trial_rows(study)}
    print(f"resume: finished before the kill {sorted(finished_before)} unchanged: {kept}; re-runs {reruns}; "
          f"repeated finished trials: {repeated or 'none'}; second command {seconds:.0f} s", flush=True)


def ddp(args: argparse.Namespace, results: dict[str, Any]) -> None:
    sweep_dir = args.out / "ddp"
    seconds = run_sweep(sweep_command(sweep_dir, "bench_ddp", 1, args, "trainer=ddp_cpu",
                                      "hydra/sweeper/pruner=threshold", "hydra.sweeper.pruner.lower=101"),
                        args.out / "ddp.log")
    study = load_recorded_study(sweep_dir)
    assert study is not None
    (trial,) = study.get_trials(deepcopy=False)
    events = [json.loads(line) for line in (sweep_dir / "jobs.jsonl").read_text().splitlines() if line.strip()]
    console = (args.out / "ddp.log").read_text()  # each rank announces itself on the console
    status = json.loads((sweep_dir / "0" / "run_status.json").read_text())
    results["ddp"] = {"seconds": round(seconds, 1), "exit": 0, "state": trial.state.name.lower(),
                      "pruned_after_epoch": trial.user_attrs.get(PRUNED_AT), "jobs_jsonl": events,
                      "failed_jobs_jsonl": (sweep_dir / "failed_jobs.jsonl").is_file(),
                      "two_ranks": "GLOBAL_RANK: 1, MEMBER: 2/2" in console,
                      "rank_1_log_in_job_dir": (sweep_dir / "0" / "train_ddp_process_1.log").is_file(),
                      "epochs_done": status["epochs_done"],
                      "stopped_by": status["stopped_by"]}
    print(f"ddp: exit 0 in {seconds:.0f} s; trial {trial.state.name.lower()} after epoch "
          f"{trial.user_attrs.get(PRUNED_AT)}; epochs done {status['epochs_done']}; jobs.jsonl ended "
          f"{[e.get('outcome') for e in events if e['event'] == 'ended']}; failed_jobs.jsonl "
          f"{'present' if results['ddp']['failed_jobs_jsonl'] else 'absent'}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--resume-trials", type=int, default=4)
    parser.add_argument("--max-train-sentences", type=int, default=10000)
    parser.add_argument("--kill-after-s", type=float, default=20.0,
                        help="seconds after the second trial's run wrote init.ckpt")
    parser.add_argument("--heartbeat-s", type=int, default=5, help="resume: the trials' heartbeat interval")
    parser.add_argument("--grace-s", type=int, default=20, help="resume: a heartbeat older than this is a lost trial")
    parser.add_argument("--out", type=Path, default=None)
    records.add_options(parser, smoke="2 trials on a made-up corpus and made-up tasks")
    args = parser.parse_args()
    args.parts = [p for p in args.parts.split(",") if p]
    unknown = set(args.parts) - set(PARTS)
    if unknown:
        raise SystemExit(f"--parts: unknown {sorted(unknown)}; choose from {', '.join(PARTS)}")
    if args.smoke:
        args.trials, args.resume_trials, args.kill_after_s = 2, 2, 0.0  # the kill in the second trial, as at full size
        args.heartbeat_s, args.grace_s = 1, 3  # the second command's start-up outlasts the grace: no waiting
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    args.out = (args.out or ROOT / "logs" / "benchmarks" / "pruned_sweep" / stamp).resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    run = records.start("pruned_sweep", args, ROOT)
    results: dict[str, Any] = {"trials": args.trials, "max_train_sentences": None if args.smoke else
                               args.max_train_sentences, "out": str(args.out)}
    compare(args, results)
    if "resume" in args.parts:
        resume(args, results)
    if "ddp" in args.parts:
        ddp(args, results)
    run.write(results, libraries=("optuna",))


if __name__ == "__main__":
    main()
