"""What a short command costs as a whole process: its start-up and shutdown against its work.

    python benchmarks/cli_startup.py                 # 5 rounds of every case, alternating
    python benchmarks/cli_startup.py --rounds 9
    python benchmarks/cli_startup.py --smoke         # 1 round of the two train.py cases with and without the freeze

Each case is a fresh ``python`` process, timed from its start to its end (wall seconds, and the CPU seconds of it and
every process it started), in rounds that run every case once in turn:

- ``train``: ``train.py`` for 3 steps of a BoW model on a made-up corpus of four pages, prepared into an empty cache (a
  test's or a first run's case), as shipped: the imports' objects frozen (``sentence_lab.cli.imported_objects``) and
  the corpus tokenised in this process (``data.preprocess_workers: null`` on a few pages,
  ``sentence_lab.datamodules.corpus.workers_for``);
- ``train, gc not frozen``: the same with ``gc.freeze`` made a no-op before the command starts;
- ``train, 2 workers``: the same with ``data.preprocess_workers=2`` (what an unset value gave on two cores before);
- ``evaluate`` and ``evaluate, gc not frozen``: ``evaluate.py encoder=bow_glove`` on one made-up task (MR).

Printed: each case's median, minimum and maximum, and each variant's median against the shipped one's. The figures go
to a JSON record (``--output``).
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lib import records, smoke_inputs

ROOT = Path(__file__).resolve().parents[1]
# The command run with gc.freeze made a no-op: the variant without the freeze
NO_FREEZE = ("import gc, runpy, sys; gc.freeze = lambda: None; sys.argv = sys.argv[1:]; "
             "runpy.run_path(sys.argv[0], run_name='__main__')")


def commands(work: Path, corpus: Path) -> dict[str, list[str]]:
    """Each case's command; ``{run}`` in an argument becomes the round's own folder."""
    train = [str(ROOT / "train.py"), "encoder=bow", "encoder.embed_dim=16", "encoder.embedding_init=random",
             f"data.train_dir={corpus / 'train'}", f"data.valid_dir={corpus / 'valid'}", "data.batch_size=8",
             "trainer.max_steps=3", "~callbacks.eval_suite", "logger=none", "print_config=false",
             "test_after_fit=false", f"paths.cache_dir={work}/{{run}}/cache", f"paths.log_dir={work}/{{run}}/logs"]
    evaluate = [str(ROOT / "evaluate.py"), "encoder=bow_glove", "tasks=[MR]", "evaluation.kfold=2",
                "evaluation.max_epoch=4", "evaluation.l2_grid=[1e-3]", f"results_file={work}/{{run}}/results.json",
                f"hydra.run.dir={work}/{{run}}/hydra"]
    return {"train": [sys.executable, *train],
            "train, gc not frozen": [sys.executable, "-c", NO_FREEZE, *train],
            "train, 2 workers": [sys.executable, *train, "data.preprocess_workers=2"],
            "evaluate": [sys.executable, *evaluate],
            "evaluate, gc not frozen": [sys.executable, "-c", NO_FREEZE, *evaluate]}


def timed(cmd: list[str], env: dict[str, str], log: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the process and its children) of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with open(log, "w") as out:
        code = subprocess.run(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {code}: see {log}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 2), "min": round(min(values), 2),
            "max": round(max(values), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    records.add_options(parser, smoke="1 round of the first two cases")
    args = parser.parse_args()
    rounds = 1 if args.smoke else args.rounds
    run = records.start("cli_startup", args, ROOT)
    with tempfile.TemporaryDirectory(prefix="cli_startup_") as tmp:
        work = Path(tmp)
        corpus = smoke_inputs.tiny_corpus(work / "corpus", sentences=60)
        data = smoke_inputs.tiny_senteval(work / "data")
        env = {k: v for k, v in os.environ.items() if k != "SENTENCE_DATA"} | {"SENTENCE_DATA": str(data),
                                                                                "PROJECT_ROOT": str(work)}
        cases = commands(work, corpus)
        if args.smoke:
            cases = dict(list(cases.items())[:2])
        figures: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": []} for name in cases}
        for r in range(rounds):
            for i, (name, cmd) in enumerate(cases.items()):
                folder = f"r{r}-c{i}"
                (work / folder).mkdir()
                wall, cpu = timed([a.replace("{run}", folder) for a in cmd], env, work / folder / "log.txt")
                figures[name]["wall"].append(wall)
                figures[name]["cpu"].append(cpu)
                print(f"round {r + 1}/{rounds} {name}: {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    results: dict[str, Any] = {"rounds": rounds, "cases": {}}
    print(f"\n{'case':<26}{'wall median (min-max)':>26}{'CPU median (min-max)':>26}{'wall / shipped':>16}")
    for name, values in figures.items():
        shipped = figures[name.split(",")[0]]
        ratio = statistics.median(values["wall"]) / statistics.median(shipped["wall"])
        results["cases"][name] = {"wall": spread(values["wall"]), "cpu": spread(values["cpu"]),
                                  "wall_over_shipped": round(ratio, 3), "seconds": values}
        w, c = spread(values["wall"]), spread(values["cpu"])
        print(f"{name:<26}{w['median']:>10.2f} ({w['min']:.2f}-{w['max']:.2f}){c['median']:>12.2f} "
              f"({c['min']:.2f}-{c['max']:.2f}){ratio:>14.3f}")
    run.write(results)


if __name__ == "__main__":
    main()
