"""A directory of runs -> a table and the probing paper's figures.

    python report.py logs/train/multiruns/<time>        (or python -m sentence_lab.tools.report <dir>)
    python report.py logs --neighbours                    (+ nearest neighbours of a few sentences per run)

Every run below the directory (a folder with ``.hydra/config.yaml``) is collected: its settings, the
per-epoch scores of the evaluation suite (``eval/epoch_NNN.json``), its training loss (TensorBoard) and its
test-set scores (``test_results.json``). Written into the directory:

- ``report.md`` and ``report.csv``: runs x tasks, the final score and the best one (with its epoch), and the
  run's objective, encoder, data and key settings as columns;
- ``probing_curves.png``: probing accuracy per epoch for each run (Conneau et al. 2018, Figure 1);
- ``correlations.png``: Spearman correlations across runs between probing and downstream scores, cells with
  p >= 0.05 marked (their Figure 2; needs at least 3 runs with both kinds of scores);
- ``training_loss.png``: the training loss of each run;
- ``neighbours.md`` (``--neighbours``): each run's nearest sentences to a few queries in a pool (Logeswaran
  & Lee 2018, Table 5).
"""
from __future__ import annotations

import argparse
import csv
import io
import logging
import os
import sys
from dataclasses import dataclass, field
from itertools import permutations
from pathlib import Path

import numpy as np
import yaml
from scipy.stats import rankdata, spearmanr
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from sentence_lab.adapters.trained import load_checkpoint_encoder
from sentence_lab.evaluation.results import probe_details, read_results
from sentence_lab.evaluation.sts_conventions import CONVENTIONS, StsConvention, convention
from sentence_lab.evaluation.tasks.registry import TASKS, get_path
from sentence_lab.home import ASSETS
from sentence_lab.text.documents import list_documents, read_document, split_sentences
from sentence_lab.text.files import EXIT_WRITE_FAILED, atomic_write_text, write_failure
from sentence_lab.tools.compare import with_convention

log = logging.getLogger(__name__)

SETTINGS = {  # column -> dotted key of the composed config
    "seed": "seed", "batch_size": "data.batch_size", "lr": "model.optimizer.lr", "max_epochs": "trainer.max_epochs",
    "tags": "tags"}
QUERIES = ("He looked at her and smiled.", "The rain had not stopped for three days.",
           "I do not know what you mean.", "She opened the door and walked in.", "What is the matter with you?")


@dataclass
class Run:
    """One training run's record."""

    path: Path
    name: str
    choices: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    curves: dict[str, dict[int, float]] = field(default_factory=dict)  # task -> epoch -> main score
    families: dict[str, str] = field(default_factory=dict)  # task -> probing | transfer | ...
    loss: list[tuple[int, float]] = field(default_factory=list)
    tests: dict[str, float] = field(default_factory=dict)
    probes: dict[str, str] = field(default_factory=dict)  # task -> probe details of its last epoch
    # selectivity|mdl_kbits -> task -> epoch -> value
    measures: dict[str, dict[str, dict[int, float]]] = field(default_factory=dict)
    reference: bool = False  # a results file of a fixed encoder (bow_glove, minilm), not a training run
    last_results: dict = field(default_factory=dict)  # the results document of the last epoch evaluated

    def final(self, task: str) -> float | None:
        scores = self.curves.get(task)
        return scores[max(scores)] if scores else None

    def best(self, task: str) -> tuple[float, int] | None:
        scores = self.curves.get(task)
        if not scores:
            return None
        epoch = max(scores, key=lambda e: (scores[e], -e))
        return scores[epoch], epoch


def read_csv_scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar a run logged with ``logger=csv`` (``<run>/csv/metrics.csv``): tag -> [(step, value)], by step."""
    points: dict[str, dict[int, float]] = {}
    for path in sorted(run_dir.glob("csv/**/metrics.csv")):
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                step = int(float(row.get("step") or 0))
                for tag, value in row.items():
                    if tag not in ("step", "epoch") and value not in (None, ""):
                        points.setdefault(tag, {})[step] = float(value)
    return {tag: sorted(values.items()) for tag, values in points.items()}


def read_scalars(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar a run logged: from TensorBoard (``<run>/tensorboard``), else from ``logger=csv``'s
    ``metrics.csv``: tag -> [(step, value)], by step."""
    events = sorted(run_dir.glob("tensorboard/**/events.out.tfevents.*"))
    if not events:
        return read_csv_scalars(run_dir)
    points: dict[str, dict[int, float]] = {}
    for path in events:
        acc = EventAccumulator(str(path), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags()["scalars"]:
            points.setdefault(tag, {}).update({e.step: e.value for e in acc.Scalars(tag)})
    return {tag: sorted(values.items()) for tag, values in points.items()}


def _read_config(run_dir: Path) -> dict | None:
    try:
        return yaml.safe_load((run_dir / ".hydra" / "config.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return None


def is_training_run(cfg: dict | None) -> bool:
    """A ``train.py`` run (not, e.g., the folder of an ``evaluate.py`` call): its config has an objective."""
    return cfg is not None and "objective" in cfg and "trainer" in cfg


def load_run(run_dir: Path, root: Path, cfg: dict | None = None) -> Run:
    cfg = (_read_config(run_dir) or {}) if cfg is None else cfg
    hydra_file = run_dir / ".hydra" / "hydra.yaml"
    choices = {}
    if hydra_file.is_file():
        choices = (yaml.safe_load(hydra_file.read_text()) or {}).get("hydra", {}).get("runtime", {}).get("choices", {})
    name = str(run_dir.relative_to(root)) if run_dir != root else run_dir.name
    run = Run(run_dir, name, {k: choices.get(k) for k in ("objective", "encoder", "data", "experiment")},
              {column: get_path(cfg, key) for column, key in SETTINGS.items()})
    for path in sorted((run_dir / "eval").glob("epoch_*.json")):
        try:
            doc = read_results(path)
        except ValueError as err:
            log.warning("%s (a run killed while writing it?): skipped", err)
            continue
        epoch = int(doc.get("epoch", path.stem.split("_")[-1]))
        for task, result in doc.get("results", {}).items():
            add_result(run, task, result, epoch)
        run.last_results = doc
    run.loss = read_scalars(run_dir).get("train/loss_step", [])
    tests = run_dir / "test_results.json"
    if tests.is_file():
        try:
            run.tests = {k: r["main_score"] for k, r in read_results(tests)["results"].items()}
        except ValueError as err:
            log.warning("%s: skipped", err)
    return run


def load_reference(path: Path) -> Run:
    """An ``evaluate.py`` results file as a table row beside the runs (e.g. bow_glove, all-MiniLM-L6-v2)."""
    doc = read_results(path)
    name = doc.get("encoder", {}).get("name") or Path(path).stem
    run = Run(Path(path), f"reference: {name}", {"objective": "-", "encoder": name, "data": "-"}, reference=True)
    for task, result in doc.get("results", {}).items():
        add_result(run, task, result, 0)
    run.last_results = doc
    return run


def add_result(run: Run, task: str, result: dict, epoch: int) -> None:
    """One task's result at one epoch: its main score, its probe, and selectivity and codelength when measured."""
    if result.get("main_score") is None:
        return
    run.curves.setdefault(task, {})[epoch] = float(result["main_score"])
    spec = TASKS.get(task)
    run.families[task] = spec.family if spec else "other"
    if (details := probe_details(result)) and epoch >= max(run.curves[task]):
        run.probes[task] = details
    if isinstance(result.get("selectivity"), (int, float)):
        run.measures.setdefault("selectivity", {}).setdefault(task, {})[epoch] = float(result["selectivity"])
    if isinstance(result.get("mdl"), dict) and isinstance(result["mdl"].get("online_kbits"), (int, float)):
        run.measures.setdefault("mdl_kbits", {}).setdefault(task, {})[epoch] = float(result["mdl"]["online_kbits"])


def find_runs(root: Path) -> list[Run]:
    """Every training run below ``root`` (``root`` itself included), in path order."""
    dirs = sorted({p.parent.parent for p in root.glob("**/.hydra/config.yaml")})
    configs = {d: _read_config(d) for d in dirs}
    return [load_run(d, root, cfg) for d, cfg in configs.items() if is_training_run(cfg)]


# ---- the table --------------------------------------------------------------------------------------
def _tasks(runs: list[Run]) -> list[str]:
    seen: dict[str, str] = {}
    for run in runs:
        seen.update(run.families)
    order = {"probing": 0, "transfer": 1, "relatedness": 2, "similarity": 3}
    return sorted(seen, key=lambda t: (order.get(seen[t], 9), t))


def table_rows(runs: list[Run]) -> tuple[list[str], list[list]]:
    tasks = _tasks(runs)
    tests = sorted({k for run in runs for k in run.tests})
    header = ["run", "objective", "encoder", "data", *SETTINGS, "epochs"]
    for task in tasks:
        header += [f"{task} final", f"{task} best", f"{task} best epoch"]
    header += tests
    rows = []
    for run in runs:
        epochs = max((max(c) for c in run.curves.values()), default=None)
        row = [run.name, run.choices.get("objective"), run.choices.get("encoder"), run.choices.get("data"),
               *(run.settings.get(k) for k in SETTINGS), epochs]
        for task in tasks:
            best = run.best(task)
            row += [run.final(task), best[0] if best else None, best[1] if best else None]
        row += [run.tests.get(k) for k in tests]
        rows.append(row)
    return header, rows


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) <= 1.0 else f"{value:.2f}"
    return str(value)


def write_table(runs: list[Run], out: Path) -> None:
    header, rows = table_rows(runs)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows([[_cell(v) for v in row] for row in rows])
    atomic_write_text(out / "report.csv", buffer.getvalue())
    lines = [f"# Report: {len(runs)} run(s) under `{out}`", "",
             "Final and best score per task (accuracy in %, correlations in [-1, 1]) from the evaluation suite "
             "of each run (`eval/epoch_NNN.json`; epoch 0 = before training).", ""]
    short = [h for h in header if not h.endswith(" best epoch")]
    keep = [header.index(h) for h in short]
    lines.append("| " + " | ".join(short) + " |")
    lines.append("|" + "---|" * len(short))
    for row in rows:
        lines.append("| " + " | ".join(_cell(row[i]) for i in keep) + " |")
    probed = [run for run in runs if run.probes]
    if probed:
        tasks = [t for t in _tasks(runs) if any(t in run.probes for run in probed)]
        lines += ["", "Probes of the last epoch: the probe that scored each task and what it chose on dev; selectivity "
                  "(accuracy minus the control task's) and online codelength where measured.", "",
                  "| run | " + " | ".join(tasks) + " |", "|" + "---|" * (len(tasks) + 1)]
        lines += [f"| {run.name} | " + " | ".join(run.probes.get(t, "") for t in tasks) + " |" for run in probed]
    figures = [p.name for p in (out / "probing_curves.png", out / "probing_measures.png", out / "correlations.png",
                                out / "training_loss.png") if p.is_file()]
    if figures:
        lines += ["", "Figures: " + ", ".join(f"[{f}]({f})" for f in figures)]
    atomic_write_text(out / "report.md", "\n".join(lines) + "\n")


def sts_table(runs: list[Run], sts: StsConvention) -> str:
    """The STS rows of each run's last evaluated epoch as ``sts`` reports them (x100), with their mean; a cell is
    empty where the run did not evaluate the task (``simcse`` reads the cosine tasks: tasks=sts_cosine)."""
    docs = [with_convention(run.last_results, sts) for run in runs]
    lines = [f"STS as {sts.reproduces} (x100, last epoch evaluated).", "",
             "| task | " + " | ".join(run.name for run in runs) + " |", "|---" * (len(runs) + 1) + "|"]
    values = {run.name: [] for run in runs}
    for task in sts.tasks:
        cells = []
        for run, doc in zip(runs, docs):
            score = doc["results"].get(task, {}).get("main_score")
            cells.append("" if score is None else f"{100 * score:.2f}")
            if score is not None:
                values[run.name].append(100 * score)
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    complete = [len(values[run.name]) == len(sts.tasks) for run in runs]
    lines.append("| mean | " + " | ".join(f"{sum(values[r.name]) / len(values[r.name]):.2f}" if ok else ""
                                         for r, ok in zip(runs, complete)) + " |")
    return "\n".join(lines) + "\n"


# ---- figures ----------------------------------------------------------------------------------------
def _pyplot():
    """pyplot on the file-only backend: chosen here, when a figure is drawn, because importing this module must not
    switch the backend of a process that imports it (a notebook's, a test's)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}.png")
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    os.replace(tmp, path)


def plot_probing_curves(runs: list[Run], path: Path) -> bool:
    """One panel per run: each probing task's accuracy against epochs of training (references: dashed lines)."""
    references = [r for r in runs if r.reference]
    runs = [r for r in runs if not r.reference and any(r.families.get(t) == "probing" for t in r.curves)]
    if not runs:
        return False
    plt = _pyplot()
    cols = min(3, len(runs))
    rows = (len(runs) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False, sharey=True)
    for ax, run in zip(axes.flat, runs):
        for task in sorted(t for t in run.curves if run.families.get(t) == "probing"):
            epochs = sorted(run.curves[task])
            probe = run.probes.get(task, "").split(",")[0]
            line, = ax.plot(epochs, [run.curves[task][e] for e in epochs], marker="o",
                            label=f"{task} ({probe})" if probe else task)
            for ref in references:
                if ref.final(task) is not None:
                    ax.axhline(ref.final(task), color=line.get_color(), linestyle="--", linewidth=0.8, alpha=0.6)
        ax.set_title(f"{run.name}: {run.choices.get('objective')} / {run.choices.get('encoder')}", fontsize=9)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel("epoch (0 = untrained)")
        ax.set_ylabel("probing accuracy (%)")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(runs):]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7, loc="best")
    title = "Probing task accuracy per epoch (cf. Conneau et al. 2018, Figure 1)"
    if references:
        title += "; dashed: " + ", ".join(r.choices["encoder"] for r in references)
    fig.suptitle(title)
    _save(fig, path)
    plt.close(fig)
    return True


def plot_probing_measures(runs: list[Run], path: Path) -> bool:
    """Per run, selectivity and online codelength of each probing task against epochs, when the runs measured them
    (``callbacks.eval_suite.params.controls=true`` / ``mdl=true``)."""
    runs = [r for r in runs if r.measures]
    if not runs:
        return False
    plt = _pyplot()
    kinds = [("selectivity", "selectivity (accuracy - control, points)"), ("mdl_kbits", "online codelength (kbits)")]
    fig, axes = plt.subplots(len(runs), 2, figsize=(10, 3.6 * len(runs)), squeeze=False)
    for row, run in zip(axes, runs):
        for ax, (kind, label) in zip(row, kinds):
            for task, points in sorted(run.measures.get(kind, {}).items()):
                epochs = sorted(points)
                probe = run.probes.get(task, "").split(",")[0]
                ax.plot(epochs, [points[e] for e in epochs], marker="o", label=f"{task} ({probe})" if probe else task)
            ax.set_title(f"{run.name}: {label}", fontsize=9)
            ax.set_xlabel("epoch (0 = untrained)")
            ax.xaxis.get_major_locator().set_params(integer=True)
            ax.grid(alpha=0.3)
            if ax.lines:
                ax.legend(fontsize=7, loc="best")
    fig.suptitle("Controls (Hewitt & Liang 2019) and MDL (Voita & Titov 2020) per epoch")
    _save(fig, path)
    plt.close(fig)
    return True


def spearman_with_p(a: list[float], b: list[float]) -> tuple[float, float]:
    """Spearman's rho and its two-sided p-value: exact over every permutation for up to 8 runs (scipy's
    t-approximation calls rho = 1 on 3 runs "p = 0"; the exact value is 1/3), scipy's beyond."""
    rho = float(spearmanr(a, b).statistic)
    if len(a) > 8:
        return rho, float(spearmanr(a, b).pvalue)
    ra, rb = rankdata(a), rankdata(b)
    rhos = [float(np.corrcoef(ra, np.asarray(p))[0, 1]) for p in permutations(rb)]
    return rho, float(np.mean([abs(r) >= abs(rho) - 1e-12 for r in rhos]))


def correlation_matrix(runs: list[Run]) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Spearman correlations across runs (final scores) between probing tasks (rows) and downstream tasks
    (columns), with their p-values; a pair needs at least 3 runs that have both scores."""

    runs = [r for r in runs if not r.reference]
    tasks = _tasks(runs)
    families = {t: f for r in runs for t, f in r.families.items()}
    probing = [t for t in tasks if families[t] == "probing"]
    downstream = [t for t in tasks if families[t] != "probing"]
    rho = np.full((len(probing), len(downstream)), np.nan)
    pval = np.full_like(rho, np.nan)
    for i, p in enumerate(probing):
        for j, d in enumerate(downstream):
            pairs = [(r.final(p), r.final(d)) for r in runs if r.final(p) is not None and r.final(d) is not None]
            if len(pairs) >= 3 and len({a for a, _ in pairs}) > 1 and len({b for _, b in pairs}) > 1:
                rho[i, j], pval[i, j] = spearman_with_p([a for a, _ in pairs], [b for _, b in pairs])
    return probing, downstream, rho, pval


def plot_correlations(runs: list[Run], path: Path, alpha: float = 0.05) -> bool:
    probing, downstream, rho, pval = correlation_matrix(runs)
    if not probing or not downstream or np.isnan(rho).all():
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(1.0 + 0.7 * len(downstream), 1.0 + 0.5 * len(probing)))
    image = ax.imshow(rho, cmap="RdBu_r", vmin=-1, vmax=1)
    for i in range(len(probing)):
        for j in range(len(downstream)):
            if np.isnan(rho[i, j]):
                continue
            weak = pval[i, j] >= alpha
            ax.text(j, i, f"{rho[i, j]:.2f}" + ("\n(n.s.)" if weak else ""), ha="center", va="center", fontsize=7,
                    color="grey" if weak else "black")
    ax.set_xticks(range(len(downstream)), downstream, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(probing)), probing, fontsize=8)
    fig.colorbar(image, ax=ax, label="Spearman correlation across runs")
    ax.set_title(f"Probing vs downstream across {len(runs)} runs (n.s.: p >= {alpha}; cf. Conneau et al. 2018, "
                 "Figure 2)", fontsize=9)
    _save(fig, path)
    plt.close(fig)
    return True


def plot_losses(runs: list[Run], path: Path) -> bool:
    runs = [r for r in runs if r.loss]
    if not runs:
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for run in runs:
        ax.plot([s for s, _ in run.loss], [v for _, v in run.loss], label=run.name, linewidth=1)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    _save(fig, path)
    plt.close(fig)
    return True


# ---- nearest neighbours -------------------------------------------------------------------------------
def default_pool(limit: int = 3000) -> list[str]:
    """Sentences of the shipped validation books."""
    root = ASSETS / "books" / "valid"
    pool: list[str] = []
    for doc in list_documents(root):
        pool += [s for s in split_sentences(read_document(doc)) if 4 <= len(s.split()) <= 30]
    return list(dict.fromkeys(pool))[:limit]


def neighbours(runs: list[Run], queries: list[str], pool: list[str], k: int = 3) -> str:
    """Each run's ``k`` nearest pool sentences (cosine) to each query, from its best checkpoint."""
    lines = ["# Nearest neighbours", "",
             f"Pool: {len(pool)} sentences; cosine similarity of each run's best checkpoint.",
             ""]
    for run in runs:
        try:
            model, _ = load_checkpoint_encoder(str(run.path), vocab_expansion=True)
        except (FileNotFoundError, ValueError) as err:
            lines += [f"## {run.name}", "", f"no checkpoint: {err}", ""]
            continue
        unit = lambda x: x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)  # noqa: E731
        pool_vectors, query_vectors = unit(model.encode(pool)), unit(model.encode(queries))
        lines += [f"## {run.name}", ""]
        for query, sims in zip(queries, query_vectors @ pool_vectors.T):
            top = np.argsort(-sims)[:k]
            lines.append(f"- **{query}**")
            lines += [f"  - {pool[i]} ({sims[i]:.3f})" for i in top]
        lines.append("")
    return "\n".join(lines) + "\n"


def build_report(root: Path, with_neighbours: bool = False, queries: list[str] | None = None,
                 pool: list[str] | None = None, references: list[Path] | None = None,
                 sts_convention: str | None = None) -> list[Run]:
    runs = find_runs(root)
    if not runs:
        raise FileNotFoundError(f"no run under {root} (a run is a folder with .hydra/config.yaml): point report.py at "
                                "a run or multirun directory under logs/")
    runs += [load_reference(p) for p in references or []]
    plot_probing_curves(runs, root / "probing_curves.png")
    plot_probing_measures(runs, root / "probing_measures.png")
    plot_correlations(runs, root / "correlations.png")
    plot_losses(runs, root / "training_loss.png")
    write_table(runs, root)
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
                             "senteval_spearman; sentence_lab/evaluation/sts_conventions.py)")
    args = parser.parse_args(argv)
    read = lambda p: [l.strip() for l in p.read_text(encoding="utf-8").splitlines() if l.strip()] if p else None  # noqa: E731,E741
    try:
        runs = build_report(args.root.resolve(), args.neighbours, read(args.queries), read(args.pool),
                            [p.resolve() for p in args.reference], args.sts_convention)
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
