"""A directory of runs -> a table and the probing paper's figures.

    python report.py logs/train/multiruns/<time>        (or python -m sentence_lab.reporting.report <dir>)
    python report.py logs --neighbours                    (+ nearest neighbours of a few sentences per run)

Every run below the directory (a folder with ``.hydra/config.yaml``) is collected: its settings, the
per-epoch scores of the evaluation suite (``eval/epoch_NNN.json``), its training loss (TensorBoard) and its
test-set scores (``test_results.json``). Written into the directory:

- ``report.md`` and ``report.csv``: runs x tasks, the final score and the best one (with its epoch), and the
  run's objective, encoder, data and key settings as columns;
- ``probing_curves.png``: probing accuracy per epoch for each run (Conneau et al. 2018, Figure 1);
- ``seed_curves.png`` and a section of ``report.md`` (runs that differ only in their seed): per configuration the
  mean, sd and 95% interval of each task, curves with bands, differences between configurations the seeds do not
  explain (``sentence_lab.reporting.seeds``);
- ``probing_layers.png`` and a table per run in ``report.md`` (runs evaluated with ``layers=true``): each task's
  score per layer and epoch, and where in the depth it peaks;
- ``layer_geometry.png`` (runs with ``callbacks.eval_suite.geometry``): a layer x epoch heat map of each layer's
  linear CKA to epoch 0, beside alignment and uniformity per epoch; and in ``report.md``'s seeds section each layer's
  CKA between the seeds of a configuration (``sentence_lab.reporting.geometry``);
- a table per run with a second language (a J_bi model's ``sides.<lang>``): its tasks at epoch 0 and at the last
  epoch, translation retrieval's error beside its baselines;
- ``correlations.png``: Spearman correlations across runs between probing and downstream scores, cells with
  p >= 0.05 marked (their Figure 2; needs at least 3 runs with both kinds of scores);
- ``training_loss.png``: the training loss of each run;
- ``study.md`` and ``optuna_*.png`` (an Optuna sweep's directory): its trials, complete, pruned or failed, the
  best parameters or the Pareto front, parameter importances, and Optuna's figures (``sentence_lab.reporting.study``);
- ``neighbours.md`` (``--neighbours``): each run's nearest sentences to a few queries in a pool (Logeswaran
  & Lee 2018, Table 5).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sentence_lab.reporting.figures import (
    plot_correlations,
    plot_losses,
    plot_probing_curves,
    plot_probing_layers,
    plot_probing_measures,
    plot_seed_bands,
)
from sentence_lab.reporting.geometry import plot_layer_geometry, seeds_cka_table
from sentence_lab.reporting.neighbours import QUERIES, default_pool, neighbours
from sentence_lab.reporting.runs import Run, find_runs, load_reference
from sentence_lab.reporting.seeds import group_by_seed, seeds_table
from sentence_lab.reporting.study import study_report
from sentence_lab.reporting.tables import sts_table, task_names, write_table
from sentence_lab.tasks.sts_conventions import CONVENTIONS, convention
from sentence_lab.text.files import EXIT_WRITE_FAILED, atomic_write_text, write_failure


def build_report(root: Path, with_neighbours: bool = False, queries: list[str] | None = None,
                 pool: list[str] | None = None, references: list[Path] | None = None,
                 sts_convention: str | None = None, storage: str | None = None) -> list[Run]:
    runs = find_runs(root)
    if not runs:
        raise FileNotFoundError(f"no run under {root} (a run is a folder with .hydra/config.yaml): point report.py at "
                                "a run or multirun directory under logs/")
    runs += [load_reference(p) for p in references or []]
    plot_probing_curves(runs, root / "probing_curves.png")
    plot_probing_layers(runs, root / "probing_layers.png")
    plot_layer_geometry(runs, root / "layer_geometry.png")
    plot_seed_bands(group_by_seed(runs), root / "seed_curves.png")
    plot_probing_measures(runs, root / "probing_measures.png")
    plot_correlations(runs, root / "correlations.png")
    plot_losses(runs, root / "training_loss.png")
    write_table(runs, root)
    seeds = seeds_table(runs, task_names(runs)) + seeds_cka_table(runs)
    if seeds:
        with open(root / "report.md", "a", encoding="utf-8") as report:
            report.write("\n" + seeds)
    study = study_report(root, storage)  # an Optuna sweep's directory: its study's trials, best, importances, figures
    if study:
        with open(root / "report.md", "a", encoding="utf-8") as report:
            report.write("\n" + study)
    if sts_convention:
        with open(root / "report.md", "a", encoding="utf-8") as report:
            report.write("\n" + sts_table(runs, convention(sts_convention)))
    if with_neighbours:
        atomic_write_text(root / "neighbours.md", neighbours([r for r in runs if not r.reference],
                                                             list(queries or QUERIES), pool or default_pool()))
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", type=Path, help="a run or multirun directory (or any folder above runs)")
    parser.add_argument("--neighbours", action="store_true", help="also nearest neighbours of a few queries")
    parser.add_argument("--queries", type=Path, help="a text file of query sentences, one per line")
    parser.add_argument("--pool", type=Path, help="a text file of pool sentences, one per line")
    parser.add_argument("--reference", type=Path, action="append", default=[],
                        help="an evaluate.py results file shown beside the runs (repeatable), e.g. bow_glove, minilm")
    parser.add_argument("--sts-convention", default=None, choices=sorted(CONVENTIONS),
                        help="also the STS rows as a paper's convention reports them (simcse, senteval, "
                             "senteval_spearman; sentence_lab/tasks/sts_conventions.py)")
    parser.add_argument("--storage", default=None,
                        help="read an Optuna sweep's study from this storage address (e.g. postgresql://..., "
                             "journal:<file>); by default only from the study file inside the sweep folder")
    args = parser.parse_args(argv)
    read = lambda p: [l.strip() for l in p.read_text(encoding="utf-8").splitlines() if l.strip()] if p else None  # noqa: E731,E741
    try:
        runs = build_report(args.root.resolve(), args.neighbours, read(args.queries), read(args.pool),
                            [p.resolve() for p in args.reference], args.sts_convention, args.storage)
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a full disk, a read-only folder: one line, the files written before are whole
        failure = write_failure(err, args.root)
        if failure is None:
            raise
        print(f"error: {failure}", file=sys.stderr)
        return EXIT_WRITE_FAILED
    written = [p.name for p in sorted(args.root.glob("*")) if p.name.startswith(("report.", "neighbours"))
               or p.suffix == ".png"]
    print(f"{len(runs)} run(s); wrote {', '.join(written)} in {args.root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
