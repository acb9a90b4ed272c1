"""Why does a decoding objective make its encoder worse than untrained? Train it with
``sentence_lab.training.diagnostics.VectorDiagnostics`` on and print how the sentence vectors change.

    python benchmarks/decoder_diagnostics.py --steps 400 -- objective=skipthought
    python benchmarks/decoder_diagnostics.py --steps 400 -- objective=autoencoder
    python benchmarks/decoder_diagnostics.py --show <run> [<run> ...]    # runs already made, plotted together
    python benchmarks/decoder_diagnostics.py --smoke      # skip-thought, 3 steps, tiny sizes, a tiny generated corpus

At steps 0, 25, 50, 100, 200, ... on the same 512 validation sentences: the mean cosine of random pairs
(anisotropy), the first principal component's share of the variance, the effective rank, the per-dimension
variance, the vector's norm, the share of a sentence's positions that win a max-pool dimension, and the decoder's
loss with each sentence vector replaced by the batch mean (the gap: how much the decoder uses the vector).
Everything after ``--`` goes to ``train.py``. Written into the run directory: ``diagnostics.jsonl`` (the
callback's), ``diagnostics.md`` (the table printed here) and ``diagnostics.png`` (the curves), with a JSON record
of the machine, versions and revision in ``diagnostics_meta.json``; every run's measurements, with the same, also go to
a JSON record (``--output``, default ``logs/benchmarks/decoder_diagnostics/<time>.json``).
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import datetime
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from lib import records, smoke_inputs
from sentence_lab.evaluation.results import git_revision, library_versions

ROOT = Path(__file__).resolve().parent.parent
# The smoke run: skip-thought (a decoding objective) at toy sizes on the tiny corpus (its folders come first).
SMOKE_OVERRIDES = ["objective=skipthought", "objective.hidden_dim=16", "objective.embed_dim=8",
                   "encoder.hidden_dim=16", "data.batch_size=8", "data.preprocess_workers=0",
                   "++trainer.val_check_interval=1", "++trainer.limit_val_batches=1", "trainer.num_sanity_val_steps=0"]
COLUMNS = [("step", "step", "{:d}"), ("anisotropy", "mean cos", "{:.3f}"), ("pc1_share", "PC1 share", "{:.3f}"),
           ("effective_rank", "eff. rank", "{:.1f}"), ("dim_variance_mean", "dim var", "{:.4f}"),
           ("dead_dim_share", "dead dims", "{:.2f}"), ("norm", "norm", "{:.2f}"),
           ("maxpool_winners", "max-pool winners", "{:.2f}"), ("decoder_loss", "loss", "{:.3f}"),
           ("decoder_loss_mean_vector", "loss, mean vector", "{:.3f}"), ("vector_use", "gap", "{:.3f}"),
           ("document_use", "document gap", "{:.3f}")]


def train(steps: int, overrides: list[str], runs: Path = ROOT / "logs" / "diagnostics") -> Path:
    run_dir = runs / datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    run_dir.mkdir(parents=True)
    cmd = [sys.executable, str(ROOT / "train.py"), *overrides, f"trainer.max_steps={steps}", "trainer.max_time=null",
           "trainer.max_epochs=1000", "~callbacks.eval_suite", "test_after_fit=false", "logger=none",
           "+callbacks.diagnostics._target_=sentence_lab.training.diagnostics.VectorDiagnostics",
           f"hydra.run.dir={run_dir}"]
    started = time.perf_counter()
    with open(run_dir / "benchmark.log", "w") as log:
        code = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT).returncode
    if code:
        raise SystemExit(f"train.py failed (exit {code}): see {run_dir / 'benchmark.log'}")
    meta = {"command": cmd, "seconds": round(time.perf_counter() - started, 1), "machine": platform.platform(),
            "processor": platform.processor(), "python": platform.python_version(), "versions": library_versions(),
            "revision": git_revision(ROOT)}
    (run_dir / "diagnostics_meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return run_dir


def table(records: list[dict]) -> str:
    present = [c for c in COLUMNS if any(c[0] in r for r in records)]
    lines = ["| " + " | ".join(title for _, title, _ in present) + " |", "|" + "---|" * len(present)]
    for r in records:
        lines.append("| " + " | ".join(fmt.format(r[key]) if key in r else "" for key, _, fmt in present) + " |")
    return "\n".join(lines) + "\n"


def plot(runs: dict[str, list[dict]], path: Path) -> None:
    """One panel per measure, one line per run (labelled with its overrides), the legend below the panels; constrained
    layout gives every title, label and the legend room of its own."""
    keys = [c for c in COLUMNS[1:] if any(c[0] in r for rows in runs.values() for r in rows)]
    columns = (len(keys) + 1) // 2
    fig, axes = plt.subplots(2, columns, figsize=(3.2 * columns, 6.6 + 0.3 * len(runs)), squeeze=False,
                             layout="constrained")
    for label, rows in runs.items():
        steps = [r["step"] for r in rows]
        for ax, (key, name, _) in zip(axes.flat, keys):
            ax.plot(steps, [r.get(key, float("nan")) for r in rows], marker="o", label=textwrap.fill(label, 90))
            ax.set_title(name)
            ax.set_xlabel("step")
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    fig.legend(*axes.flat[0].get_legend_handles_labels(), loc="outside lower center", ncol=1, fontsize=8)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def records_of(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "diagnostics.jsonl").read_text().splitlines() if line.strip()]


def label_of(run_dir: Path) -> str:
    overrides = run_dir / ".hydra" / "overrides.yaml"
    if not overrides.is_file():
        return run_dir.name
    lines = [line.strip("- ").strip() for line in overrides.read_text().splitlines()]
    return " ".join(line for line in lines if line.startswith(("objective", "encoder", "data", "model")))


def show(run_dirs: list[Path]) -> str:
    """Print each run's table (and write its diagnostics.md); plot them together in the first run's folder."""
    texts = []
    for run_dir in run_dirs:
        text = table(records_of(run_dir))
        (run_dir / "diagnostics.md").write_text(text)
        texts.append(f"{label_of(run_dir)} ({run_dir})\n\n{text}")
    plot({label_of(d): records_of(d) for d in run_dirs}, run_dirs[0] / "diagnostics.png")
    return "\n".join(texts)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    overrides = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=400, help="training steps (default 400)")
    parser.add_argument("--show", type=Path, nargs="+", help="print runs already made, plotted together")
    records.add_options(parser, "skip-thought at toy sizes (16 units) for 3 steps on a tiny generated corpus")
    args = parser.parse_args(argv)
    run = records.start("decoder_diagnostics", args, ROOT)
    with tempfile.TemporaryDirectory(prefix="diagnostics_smoke_") as tmp:
        runs = ROOT / "logs" / "diagnostics"
        if args.smoke and not args.show:
            corpus = smoke_inputs.tiny_corpus(Path(tmp) / "corpus")
            overrides = [f"data.train_dir={corpus / 'train'}", f"data.valid_dir={corpus / 'valid'}",
                         f"paths.cache_dir={Path(tmp) / 'cache'}", *SMOKE_OVERRIDES, *overrides]
            args.steps, runs = 3, Path(tmp) / "runs"
        run_dirs = args.show or [train(args.steps, overrides, runs)]
        print(show(run_dirs))
        print(f"plot: {run_dirs[0] / 'diagnostics.png'}")
        run.write({"runs": [{"run_dir": str(d), "label": label_of(d), "records": records_of(d)} for d in run_dirs],
                   "plot": str(run_dirs[0] / "diagnostics.png")}, libraries=("matplotlib",))
    return 0


if __name__ == "__main__":
    sys.exit(main())
