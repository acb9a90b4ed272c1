"""Where our BoV differs from the probing paper's by more than 5 points, measure why.

    SENTENCE_DATA=../shared/data python benchmarks/probe_gaps.py --generated logs/p22/gutenberg

The paper's BoV-fastText row (Conneau et al. 2018, Table 2) used 300-d fastText vectors and its MLP probe on
sets of 100k/10k/10k sentences, with WordContent over 1,000 words and TreeDepth over constituency depth 5-12
(8 classes). Ours, on the set ``tools.probing_gen`` makes from the Gutenberg corpus: ``bow_glove`` (50-d GloVe),
the same probe (``evaluation=probing_paper``), dependency depth with 5 classes. For each task whose gap is over 5
points, this script measures the candidate causes:

- **vector size**: BoV encoders that differ in dimension only (``benchmarks/bov_dimension_encoders.py``): GloVe at
  50-d and projected to 25-d; all-MiniLM-L6-v2's input word-piece embeddings at 384-d and projected to 50-d;
- **WordContent words**: the same task generated over 200 words instead of 1,000;
- **Depth classes**: the same task generated with 8 depth classes instead of 5 (and each set's majority class);
- **set sizes**: each task's training sentences against the paper's 100k, and its accuracy with half of them.

The main results come from ``benchmarks/probe_protocols.py``'s files for ``bow_glove`` (both protocols) in
``--out`` (run now if absent). Variant sets are generated under ``<generated>-variants/``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from probe_protocols import PAPER_BOV, PAPER_MAJORITY, TASKS, evaluate

from sentence_lab.evaluation.results import read_results
from sentence_lab.evaluation.tasks.base import iter_lines
from sentence_lab.evaluation.tasks.probing import PROBING_FILES, load_probing
from sentence_lab.tools.probing_gen.settings import SURFACE_TASKS

ROOT = Path(__file__).resolve().parent.parent
DIMENSION_ENCODERS = {name: ["encoder=callable",
                             f"encoder.function={ROOT / 'benchmarks' / 'bov_dimension_encoders.py'}:{name}"]
                      for name in ("glove25", "minilm384", "minilm50")}
GAP = 5.0
CAUSE_PROTOCOL = "prototype"  # the causes are measured with the logistic probe (minutes, not hours, on 100k sets)


def majority(folder: Path, task: str) -> float:
    """The test split's most frequent label, % of the test split (read by the engine's loader)."""
    labels = load_probing(task, folder, source=f"generated:{folder}").splits["test"].y
    return 100.0 * np.bincount(labels).max() / len(labels)


def generate_variant(corpus: str, out: Path, task: str, setting: str) -> Path:
    """``tools.probing_gen`` for one task with one setting changed (kept if already there)."""
    if not (out / "meta.json").is_file():
        parser = ["parser=none"] if task in SURFACE_TASKS else []
        cmd = [sys.executable, "-m", "sentence_lab.tools.probing_gen", f"corpus={corpus}", f"out={out}", f"tasks=[{task}]",
               setting, "workers=2", "progress=false", *parser]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr[-1500:]}")
        print(proc.stdout.strip(), flush=True)
    return out


def acc(doc: dict, task: str) -> float | None:
    return (doc["results"].get(task) or {}).get("acc")


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--generated", type=Path, required=True, help="the set tools.probing_gen made")
    parser.add_argument("--corpus", default=os.path.join(os.environ.get("SENTENCE_DATA", "../shared/data"),
                                                         "corpora", "gutenberg"))
    parser.add_argument("--out", type=Path, default=ROOT / "logs" / "probe_protocols")
    args = parser.parse_args()
    generated = args.generated.resolve()
    probing = f"generated:{generated}"
    tag = probing.replace(":", "_").replace("/", "_")
    args.out.mkdir(parents=True, exist_ok=True)

    mlp_file = args.out / f"{tag}__bow_glove__probing_paper.json"
    # The MLP grid costs minutes a task on 100k sentences: a file already there is taken with the tasks it has.
    mlp_doc = read_results(mlp_file) if mlp_file.is_file() else evaluate("bow_glove", probing, "probing_paper",
                                                                          mlp_file)[0]
    main_doc, _ = evaluate("bow_glove", probing, "prototype", args.out / f"{tag}__bow_glove__prototype.json")
    # ours: the MLP's accuracy, or the logistic probe's where the MLP file lacks the task
    ours = {t: acc(mlp_doc, t) if acc(mlp_doc, t) is not None else acc(main_doc, t) for t in TASKS}
    gaps = [t for t in TASKS if ours[t] is not None and abs(ours[t] - PAPER_BOV[t]) > GAP]
    print(f"tasks more than {GAP:.0f} points from the paper's BoV-fastText: {', '.join(gaps) or 'none'}\n")
    if not gaps:
        return

    dims = {name: evaluate(overrides, probing, CAUSE_PROTOCOL, args.out / f"{tag}__{name}__gaps.json", gaps,
                           measures=False)[0] for name, overrides in DIMENSION_ENCODERS.items()}
    meta = json.loads((generated / "meta.json").read_text())
    print("| task | paper BoV-fastText 300-d, MLP | ours GloVe 50-d, MLP | GloVe 50-d | GloVe 25-d | "
          "MiniLM word pieces 384-d | MiniLM word pieces 50-d | majority, paper | majority, ours | "
          "sizes, ours (paper: 100k/10k/10k) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for task in gaps:
        print(f"| {task} | {PAPER_BOV[task]} | {_f(acc(mlp_doc, task))} | {_f(acc(main_doc, task))} | "
              + " | ".join(_f(acc(dims[n], task)) for n in DIMENSION_ENCODERS)
              + f" | {PAPER_MAJORITY[task]} | {majority(generated, task):.1f} | {_sizes(meta, task)} |")
    print("\nMLP: the paper's probe (evaluation=probing_paper; WordContent logistic, as SentEval forces it); the other "
          "columns and the tables below: SentEval's logistic regression (evaluation=prototype), as the MLP grid costs "
          "minutes a task on 100k sentences\n")

    print(size_table(args.out, tag, generated, gaps, main_doc, meta))
    variants = {"WordContent": ("wc_words=200", "200 words"), "Depth": ("depth_classes=8", "8 depth classes")}
    rows = []
    for task, (setting, label) in variants.items():
        if task not in gaps:
            continue
        folder = generate_variant(args.corpus, Path(f"{generated}-variants") / setting.replace("=", "-"), task,
                                  setting)
        variant_meta = json.loads((folder / "meta.json").read_text())
        doc = evaluate("bow_glove", f"generated:{folder}", CAUSE_PROTOCOL,
                       args.out / f"{tag}__bow_glove__{setting.replace('=', '-')}.json", [task], measures=False)[0]
        our_setting = meta["settings"][setting.split("=")[0]]
        rows.append(f"| {task} | {label} | {_f(acc(doc, task))} | {majority(folder, task):.1f} | "
                    f"{_sizes(variant_meta, task)} |")
        rows.append(f"| {task} | {our_setting} (our set) | {_f(acc(main_doc, task))} | "
                    f"{majority(generated, task):.1f} | {_sizes(meta, task)} |")
    if rows:
        print("| task | setting | GloVe 50-d | majority | sizes |\n|---|---|---|---|---|")
        print("\n".join(rows))


def _sizes(meta: dict, task: str) -> str:
    """``tr/va/te`` sizes of ``task`` in a generated set's meta.json."""
    sizes = meta["tasks"][task]["sizes"]
    return f"{sizes['tr']}/{sizes['va']}/{sizes['te']}"


def half_train(generated: Path, task: str) -> Path:
    """A copy of the task's file with every other training sentence (dev and test unchanged)."""
    folder = Path(f"{generated}-variants") / "train-half"
    out = folder / f"{PROBING_FILES[task]}.txt"
    if not out.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        kept, seen = [], 0
        for _, line in iter_lines(generated / f"{PROBING_FILES[task]}.txt"):  # the generator writes plain .txt
            if line.startswith("tr\t"):
                seen += 1
                if seen % 2:
                    continue
            kept.append(line + "\n")
        out.write_text("".join(kept), encoding="utf-8")
    return folder


def size_table(out: Path, tag: str, generated: Path, gaps: list[str], main_doc: dict, meta: dict) -> str:
    """Accuracy with half the training split against the whole: what one more doubling of the set might add."""
    lines = ["| task | training sentences, ours (paper: 100k) | GloVe 50-d: half the training split | "
             "whole split | gain per doubling |", "|---|---|---|---|---|"]
    for task in gaps:
        folder = half_train(generated, task)
        doc = evaluate("bow_glove", f"generated:{folder}", CAUSE_PROTOCOL,
                       out / f"{tag}__bow_glove__half_{task}.json", [task], measures=False)[0]
        half, whole = acc(doc, task), acc(main_doc, task)
        gain = None if half is None or whole is None else whole - half
        lines.append(f"| {task} | {meta['tasks'][task]['sizes']['tr']} | {_f(half)} | {_f(whole)} | {_f(gain)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
