"""Does training pay off? Train a recipe (a fixed amount of work; ``--minutes`` adds a wall-clock budget), then
score the best checkpoint against the same model at initialisation (``init.ckpt``: same vocabulary and embeddings)
and ``bow_glove``.

    SENTENCE_DATA=../shared/data python benchmarks/training_pays_off.py                       # the default run
    SENTENCE_DATA=../shared/data python benchmarks/training_pays_off.py --diagnostics -- objective=autoencoder
    SENTENCE_DATA=../shared/data python benchmarks/training_pays_off.py -- experiment=qt_gutenberg
    python benchmarks/training_pays_off.py --run-dir logs/train/runs/<run>      # evaluate an existing run only
    python benchmarks/training_pays_off.py --run-dir <run> --probing            # X-Probe tasks as well
    SENTENCE_DATA=../shared/data python benchmarks/training_pays_off.py --seeds 1234,1,2 --generated --sst2
    python benchmarks/training_pays_off.py --summarize <run> <run> <run> --generated --sst2   # runs already made
    python benchmarks/training_pays_off.py --smoke      # 3 steps on a tiny generated corpus, 2 tiny generated tasks

Everything after ``--`` is passed to ``train.py``. Scores use ``evaluate.py`` (prototype protocol,
vocabulary expansion on for checkpoints); correlations are shown x100 so one mean covers all tasks.
The table and the means are printed and written to ``<run dir>/pays_off.md`` (+ ``.json``). With ``--seeds``
(or ``--summarize``), a table per seed (each against its own epoch 0: a seed draws its own initial weights) and per
task the means over seeds. Every score and mean also goes to a JSON record with the machine, versions and revision
(``--output``, default ``logs/benchmarks/training_pays_off/<time>.json``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml

from lib import records, smoke_inputs
from sentence_lab.evaluation.results import percent_score, read_results
from sentence_lab.reporting.runs import read_scalars

ROOT = Path(__file__).resolve().parent.parent

TASKS = ["MR", "CR", "SUBJ", "MPQA", "TREC", "SICKRelatedness", "STSBenchmark", "STS12", "STS13", "STS14",
         "STS15", "STS16"]
PROBING = ["Length", "WordContent", "Depth", "BigramShift", "Tense", "SubjNumber", "ObjNumber", "OddManOut",
           "CoordinationInversion"]
SMOKE_TASKS = "TREC,STS12"
# The smoke run's recipe: the default objective (Quick-Thoughts, BiLSTM-max) at 2 x 16 units for 3 steps.
SMOKE_OVERRIDES = ["encoder.hidden_dim=16", "data.batch_size=8", "data.preprocess_workers=0", "trainer.max_steps=3",
                   "trainer.max_epochs=1", "++trainer.val_check_interval=1", "++trainer.limit_val_batches=1",
                   "trainer.num_sanity_val_steps=0", "logger=none", "test_after_fit=false"]


def run(cmd: list[str], log: Path) -> float:
    t0 = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.run(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode not in (0, 1):  # 1: some task failed, results still written
        raise SystemExit(f"{' '.join(cmd)} failed with exit {proc.returncode}: see {log}")
    return time.perf_counter() - t0


DIAGNOSTICS = "+callbacks.diagnostics._target_=sentence_lab.training.diagnostics.VectorDiagnostics"


def train(minutes: float | None, overrides: list[str], keep_suite: bool = False, diagnostics: bool = False,
          runs: Path = ROOT / "logs" / "pays_off") -> Path:
    run_dir = runs / datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    run_dir.mkdir(parents=True)
    budget = [f"trainer.max_time=00:00:{int(minutes):02d}:{int(minutes % 1 * 60):02d}"] if minutes else []
    # The per-epoch evaluation suite is left out: its time would count against the training budget, and this
    # script evaluates the checkpoints itself (pass --keep-suite to keep it).
    suite = [] if keep_suite else ["~callbacks.eval_suite"]
    suite += [DIAGNOSTICS] if diagnostics else []
    cmd = [sys.executable, str(ROOT / "train.py"), *overrides, *suite, *budget, f"hydra.run.dir={run_dir}"]
    seconds = run(cmd, run_dir / "train.log")
    print(f"trained in {seconds / 60:.1f} min: {run_dir}")
    (run_dir / "train_wall_seconds.txt").write_text(f"{seconds:.1f}\n")
    return run_dir


def complete(out: Path, tasks: list[str]) -> bool:
    """A results file from an earlier call that reached every task (a killed run leaves a partial one)."""
    if not out.is_file():
        return False
    doc = json.loads(out.read_text())
    return set(tasks) <= set(doc.get("results", {})) | set(doc.get("skipped", {})) | set(doc.get("errors", {}))


def evaluate(source: list[str], tasks: list[str], out: Path, extra: tuple[str, ...] = ()) -> dict:
    if not complete(out, tasks):
        cmd = [sys.executable, str(ROOT / "evaluate.py"), *source, *extra, f"tasks=[{','.join(tasks)}]",
               f"results_file={out}", "evaluation=prototype", f"hydra.run.dir={out.parent / '.hydra_eval'}"]
        seconds = run(cmd, out.with_suffix(".log"))
        print(f"  {out.name}: {seconds:.0f} s")
    return json.loads(out.read_text())


def score(doc: dict, task: str) -> float | None:
    return percent_score(doc["results"].get(task))


def both_scores(columns: dict[str, dict], task: str) -> tuple[float, float] | None:
    """The task's score trained (best) and at epoch 0; None when either is missing."""
    trained, init = score(columns["trained (best)"], task), score(columns["epoch 0 (init)"], task)
    return None if trained is None or init is None else (trained, init)


def table(columns: dict[str, dict], tasks: list[str]) -> tuple[str, dict]:
    names = list(columns)
    lines = ["| task | " + " | ".join(names) + " | OOV % (trained) |", "|---" * (len(names) + 2) + "|"]
    means: dict[str, list[float]] = {n: [] for n in names}
    wins = 0
    for task in tasks:
        row = [score(columns[n], task) for n in names]
        oov = columns[names[0]]["results"].get(task, {}).get("oov_rate")
        lines.append(f"| {task} | " + " | ".join("n/a" if v is None else f"{v:.2f}" for v in row) +
                     f" | {'n/a' if oov is None else f'{100 * oov:.1f}'} |")
        scored = [v for v in row if v is not None]
        if len(scored) == len(row):  # every column scored the task
            for n, v in zip(names, scored):
                means[n].append(v)
            wins += scored[0] > scored[1]
    summary = {n: sum(v) / len(v) for n, v in means.items() if v}
    lines.append("| **mean** | " + " | ".join(f"**{summary.get(n, float('nan')):.2f}**" for n in names) + " | |")
    summary["wins_over_init"] = wins
    summary["tasks_compared"] = len(means[names[0]])
    return "\n".join(lines), summary


def training_summary(run_dir: Path) -> list[str]:
    """What the run trained on and how its own objective moved: objective, encoder, data, minutes, steps,
    the training loss at the first and last logged point, the monitored validation metric (first and best),
    and the test sets' scores when the data has them."""
    cfg = yaml.safe_load((run_dir / ".hydra" / "config.yaml").read_text()) if (run_dir / ".hydra").is_dir() else {}
    choices = {}
    hydra_file = run_dir / ".hydra" / "hydra.yaml"
    if hydra_file.is_file():
        choices = yaml.safe_load(hydra_file.read_text())["hydra"]["runtime"]["choices"]
    scalars = read_scalars(run_dir)
    lines = [f"objective={choices.get('objective', '?')} encoder={choices.get('encoder', '?')} "
             f"data={choices.get('data', '?')}"]
    wall = run_dir / "train_wall_seconds.txt"
    if wall.is_file():
        lines.append(f"wall clock (train.py, data processing and test sets included): "
                     f"{float(wall.read_text()) / 60:.1f} min")
    loss = scalars.get("train/loss_step", [])
    if loss:
        lines.append(f"training loss (mean over the logging window): {loss[0][1]:.4f} at step {loss[0][0]}, "
                     f"{loss[-1][1]:.4f} at step {loss[-1][0]}")
    monitor = cfg.get("monitor") or next((t for t in ("val/context_acc", "val/acc", "val/bleu", "val/hinge", "val/loss")
                                          if t in scalars), None)
    if monitor in scalars:
        values = [v for _, v in scalars[monitor]]
        best = min(values) if monitor in ("val/loss", "val/hinge") else max(values)
        lines.append(f"{monitor}: {values[0]:.4f} at the first validation, best {best:.4f} "
                     f"over {len(values)} validations")
    for other in ("val/loss", "val/ppl", "val/bleu", "val/acc", "val/hinge_acc"):
        if other != monitor and other in scalars:
            values = [v for _, v in scalars[other]]
            lines.append(f"{other}: first {values[0]:.4f}, last {values[-1]:.4f}")
    tests = run_dir / "test_results.json"
    if tests.is_file():
        doc = read_results(tests)
        lines.append("test sets (" + Path(str(doc.get("checkpoint", ""))).name + "): "
                     + ", ".join(f"{k} {r['main_score']:.4f}" for k, r in doc["results"].items()))
    return [f"- {line}" for line in lines]


def measure(run_dir: Path, args: argparse.Namespace) -> dict[str, dict[str, dict]]:
    """Score the run's best checkpoint, its epoch 0 and ``bow_glove`` on each task set; write and print the report.
    Returns ``{label: {column: results document}}``."""
    ckpts = run_dir / "checkpoints"
    if not (ckpts / "init.ckpt").is_file():
        raise SystemExit(f"{ckpts}/init.ckpt is missing: the run was not made with the init checkpoint callback")
    out = run_dir / "pays_off"
    out.mkdir(exist_ok=True)
    if args.reuse_from:
        seeds = [yaml.safe_load((d / ".hydra" / "config.yaml").read_text()).get("seed")
                 for d in (run_dir, args.reuse_from) if (d / ".hydra" / "config.yaml").is_file()]
        if len(seeds) == 2 and seeds[0] != seeds[1]:
            raise SystemExit(f"--reuse-from {args.reuse_from}: that run's seed is {seeds[1]}, this one's {seeds[0]}; "
                             "epoch 0 differs per seed: drop --reuse-from")
        for earlier in (args.reuse_from / "pays_off").glob("*.json"):
            if earlier.name.startswith(("init_", "bow_glove_")) and not (out / earlier.name).exists():
                (out / earlier.name).write_bytes(earlier.read_bytes())
    task_sets = ([("downstream", args.tasks.split(","), ())] + ([("sst2", ["SST2"], ())] if args.sst2 else [])
                 + ([("probing", PROBING, ("probing=xprobe",))]
                 if args.probing else [])
                 + ([("generated", PROBING, ("probing=generated",))] if args.generated else []))
    report, summaries = [f"# Training pays off? `{run_dir}`", "", "## training", "", *training_summary(run_dir), ""], {}
    measured = {}
    for label, tasks, extra in task_sets:
        columns = {
            "trained (best)": evaluate([f"ckpt_path={run_dir}"], tasks, out / f"best_{label}.json", extra),
            "epoch 0 (init)": evaluate([f"ckpt_path={ckpts / 'init.ckpt'}"], tasks, out / f"init_{label}.json", extra),
            "bow_glove": evaluate(["encoder=bow_glove"], tasks, out / f"bow_glove_{label}.json", extra),
        }
        measured[label] = columns
        text, summary = table(columns, tasks)
        summaries[label] = summary
        report += [f"## {label} (prototype protocol; correlations x100)", "", text, "",
                   f"trained beats epoch 0 on {summary['wins_over_init']} of {summary['tasks_compared']} tasks", ""]
    best = columns["trained (best)"].get("encoder", {}).get("source", "")
    report.append(f"best checkpoint: {best}")
    text = "\n".join(report) + "\n"
    print(text)
    (run_dir / "pays_off.md").write_text(text)
    (run_dir / "pays_off.json").write_text(json.dumps(summaries, indent=2) + "\n")
    return measured


def seed_tables(runs: dict[int, dict[str, dict[str, dict]]], tasks: list[str]) -> str:
    """Per seed: the mean of ``tasks`` trained and at epoch 0 (each seed against its own initial weights), the gain,
    the tasks better and worse; then per task the means over seeds (and the other task sets' means)."""
    lines = ["| seed | mean, trained | epoch 0 | gain | better than epoch 0 on | worse on |",
             "|---|---|---|---|---|---|"]
    gains, wins, trained_means, init_means = [], [], [], []
    for seed, measured in runs.items():
        cols = measured["downstream"]
        _, summary = table(cols, tasks)
        trained, init = summary["trained (best)"], summary["epoch 0 (init)"]
        pairs = [(t, both_scores(cols, t)) for t in tasks]
        worse = [t for t, pair in pairs if pair is not None and pair[0] <= pair[1]]
        gains.append(trained - init)
        wins.append(summary["wins_over_init"])
        trained_means.append(trained)
        init_means.append(init)
        lines.append(f"| {seed} | {trained:.2f} | {init:.2f} | {trained - init:+.2f} | {summary['wins_over_init']} of "
                     f"{summary['tasks_compared']} | {', '.join(worse) or '-'} |")
    n = len(runs)
    lines.append(f"| **mean of {n}** | **{sum(trained_means) / n:.2f}** | **{sum(init_means) / n:.2f}** | "
                 f"**{sum(gains) / n:+.2f}** | {sum(wins) / n:.1f} | |")
    lines += ["", f"| task | trained, mean of {n} seeds | epoch 0, mean of {n} | gain | seeds better |",
              "|---|---|---|---|---|"]
    for label in next(iter(runs.values())):
        names = tasks if label == "downstream" else list(next(iter(runs.values()))[label]["trained (best)"]["results"])
        for t in names:
            scored = [both_scores(m[label], t) for m in runs.values()]
            values = [v for v in scored if v is not None]
            if not values:
                continue
            a, b = sum(v[0] for v in values) / len(values), sum(v[1] for v in values) / len(values)
            lines.append(f"| {t} | {a:.2f} | {b:.2f} | {a - b:+.2f} | "
                         f"{sum(x > y for x, y in values)} of {len(values)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=None, help="training budget (trainer.max_time)")
    parser.add_argument("--run-dir", type=Path, default=None, help="evaluate this run instead of training")
    parser.add_argument("--seeds", default=None,
                        help="train and score the recipe once per seed (e.g. 1234,1,2), then print the seed table")
    parser.add_argument("--summarize", type=Path, nargs="*", default=None, metavar="RUN_DIR",
                        help="the seed table of runs already measured (each with its .hydra config)")
    parser.add_argument("--probing", action="store_true", help="also the X-Probe probing tasks")
    parser.add_argument("--generated", action="store_true",
                        help="also the probing set generated from the shipped books (assets/probing/books-en)")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--sst2", action="store_true", help="also SST2, in a table of its own (outside the mean)")
    parser.add_argument("--keep-suite", action="store_true", help="keep train.py's per-epoch evaluation suite")
    parser.add_argument("--diagnostics", action="store_true",
                        help="also record the sentence vectors' statistics during training (diagnostics.jsonl; "
                             "benchmarks/decoder_diagnostics.py --show <run> plots them)")
    parser.add_argument("--reuse-from", type=Path, default=None,
                        help="copy the epoch-0 and bow_glove results of this earlier run (same model at init: same "
                             "encoder, vocabulary and seed) instead of evaluating them again")
    records.add_options(parser, f"the default recipe at 2 x 16 units for 3 steps on a tiny generated corpus, "
                                  f"scored on {SMOKE_TASKS} of a tiny generated SentEval tree")
    parser.add_argument("overrides", nargs="*", help="train.py overrides (after --)")
    args = parser.parse_args(argv)
    run = records.start("training_pays_off", args, ROOT)
    with tempfile.TemporaryDirectory(prefix="pays_off_smoke_") as tmp:
        runs = ROOT / "logs" / "pays_off"
        if args.smoke:  # everything in a temporary folder; the subprocesses read the tiny tree
            os.environ["SENTENCE_DATA"] = str(smoke_inputs.tiny_senteval(Path(tmp) / "data"))
            corpus = smoke_inputs.tiny_corpus(Path(tmp) / "corpus")
            args.overrides = [f"data.train_dir={corpus / 'train'}", f"data.valid_dir={corpus / 'valid'}",
                              f"paths.cache_dir={Path(tmp) / 'cache'}", *SMOKE_OVERRIDES, *args.overrides]
            args.tasks = SMOKE_TASKS if args.tasks == ",".join(TASKS) else args.tasks
            runs = Path(tmp) / "runs"
        if not os.environ.get("SENTENCE_DATA"):
            raise SystemExit("set SENTENCE_DATA to the data root (e.g. ../shared/data): the tasks are read from there")
        if args.summarize is not None or args.seeds:
            dirs = ([d.resolve() for d in args.summarize] if args.summarize is not None else
                    [train(args.minutes, [*args.overrides, f"seed={s}"], args.keep_suite, args.diagnostics, runs)
                     for s in args.seeds.split(",")])
            measured = {run_seed(d): (d, measure(d, args)) for d in dirs}
            print(seed_tables({seed: m for seed, (_, m) in measured.items()}, args.tasks.split(",")))
            run.write({"runs": {seed: record_of(d, m) for seed, (d, m) in measured.items()}},
                      data=os.environ["SENTENCE_DATA"])
            return 0
        run_dir = args.run_dir.resolve() if args.run_dir else train(args.minutes, args.overrides, args.keep_suite,
                                                                         args.diagnostics, runs)
        run.write(record_of(run_dir, measure(run_dir, args)), data=os.environ["SENTENCE_DATA"])
    return 0


def record_of(run_dir: Path, measured: dict[str, dict[str, dict]]) -> dict:
    """What the JSON record keeps of one measured run: its folder, the means (``pays_off.json``), every score (x100
    for correlations, as the table) and the training summary's lines."""
    scores = {label: {column: {task: score(doc, task) for task in doc["results"]} for column, doc in columns.items()}
              for label, columns in measured.items()}
    return {"run_dir": str(run_dir), "summaries": json.loads((run_dir / "pays_off.json").read_text()),
            "scores": scores, "training": [line[2:] for line in training_summary(run_dir)]}


def run_seed(run_dir: Path) -> int:
    """The seed a run was trained with (its saved config)."""
    return int(yaml.safe_load((run_dir / ".hydra" / "config.yaml").read_text())["seed"])


if __name__ == "__main__":
    sys.exit(main())
