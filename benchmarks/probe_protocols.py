"""Logistic vs the probing paper's MLP probe, with control tasks and MDL, on the probing tasks.

    SENTENCE_DATA=../shared/data python benchmarks/probe_protocols.py                      # X-Probe, both encoders
    SENTENCE_DATA=../shared/data python benchmarks/probe_protocols.py --probing generated:probing/gutenberg \
        --encoders bow_glove --protocols probing_paper --paper-row                         # the paper's BoV row

For each encoder (``bow_glove``; ``bilstm_max``: an untrained 512-d BiLSTM-max over frozen GloVe 6B 50d, seed
1234), probing set and protocol (``prototype``: SentEval's logistic regression; ``probing_paper``: the sigmoid MLP
over nhid [50, 100, 200] x dropout [0, 0.1, 0.2] chosen on dev), ``evaluate.py`` scores the probing tasks with
``evaluation.controls=true evaluation.mdl=true``. Printed: accuracy, selectivity and MDL compression per task side
by side, the probe each task chose, and the cost of the probe, the control and MDL per task as a share of the
encoding time. Results files go to ``--out`` (a combination already complete there is not run again).
``--paper-row`` adds Conneau et al. 2018's Table 2 BoV-fastText and untrained BiLSTM-max rows beside ours.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sentence_lab.evaluation.results import probe_label, read_results  # noqa: E402

TASKS = ["Length", "WordContent", "Depth", "TopConstituents", "BigramShift", "Tense", "SubjNumber", "ObjNumber",
         "OddManOut", "CoordinationInversion"]
# Conneau et al. 2018, Table 2, top block: BoV-fastText (MLP probe), in the order of TASKS.
PAPER_BOV = dict(zip(TASKS, [66.6, 91.6, 37.1, 68.1, 50.8, 89.1, 82.1, 79.8, 54.2, 54.8]))
# Same table, BiLSTM-max block, Untrained (2 layers of 512 units over frozen 300-d fastText, section 3).
PAPER_UNTRAINED_BILSTM_MAX = dict(zip(TASKS, [73.3, 88.8, 46.2, 71.8, 70.6, 89.2, 85.8, 81.9, 73.3, 68.3]))
# Same table, Majority vote.
PAPER_MAJORITY = dict(zip(TASKS, [20.0, 0.5, 17.9, 5.0, 50.0, 50.0, 50.0, 50.0, 50.0, 50.0]))
ENCODERS = {"bow_glove": ["encoder=bow_glove"],
            "bilstm_max": ["encoder=bilstm_max", "seed=1234"]}  # untrained: 2 x 256 over frozen GloVe 6B 50d


def evaluate(encoder: str | list[str], probing: str, protocol: str, out: Path, tasks: list[str] = TASKS,
             measures: bool = True) -> tuple[dict, float]:
    """The results document of one combination (run now unless ``out`` already holds every task) and its wall time.

    ``encoder``: a name of ``ENCODERS`` or ``evaluate.py`` overrides; ``measures``: controls and MDL as well."""
    if out.is_file():
        doc = read_results(out)
        if set(doc["results"]) | set(doc["skipped"]) | set(doc["errors"]) >= set(tasks):
            return doc, float(doc.get("wall_seconds", 0.0))
    overrides = ENCODERS[encoder] if isinstance(encoder, str) else list(encoder)
    extra = ["evaluation.controls=true", "evaluation.mdl=true"] if measures else []
    cmd = [sys.executable, str(ROOT / "evaluate.py"), *overrides, f"evaluation={protocol}",
           f"tasks=[{','.join(tasks)}]", f"probing={probing}", *extra, f"results_file={out}", "overwrite=true"]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-1500:]}")
    doc = read_results(out)
    doc["wall_seconds"] = round(wall, 1)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    return doc, wall


def _f(value, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(runs: dict[tuple[str, str], dict], paper_row: bool) -> str:
    """Rows: tasks; per (encoder, protocol): accuracy / selectivity / compression."""
    keys = list(runs)
    head = "| task | " + " | ".join(f"{e}, {'MLP' if p == 'probing_paper' else 'logistic'}" for e, p in keys)
    head += " | paper BoV-fastText | paper untrained BiLSTM-max |" if paper_row else " |"
    lines = [head, "|---" * (len(keys) + 1 + 2 * paper_row) + "|"]
    for task in TASKS:
        cells = []
        for key in keys:
            r = runs[key]["results"].get(task)
            if r is None:
                cells.append("-")
                continue
            cells.append(f"{_f(r.get('acc'))} / {_f(r.get('selectivity'))} / {_f((r.get('mdl') or {}).get('compression'), 2)}")
        extra = f" | {PAPER_BOV[task]} | {PAPER_UNTRAINED_BILSTM_MAX[task]}" if paper_row else ""
        lines.append(f"| {task} | " + " | ".join(cells) + extra + " |")
    lines.append("")
    lines.append("cells: test accuracy % / selectivity (accuracy - control accuracy, points) / MDL compression "
                 "(uniform codelength / online codelength)")
    lines += ["", "| probe chosen on dev | " + " | ".join(f"{e}, {p}" for e, p in keys) + " |",
              "|---" * (len(keys) + 1) + "|"]
    for task in TASKS:
        lines.append(f"| {task} | " + " | ".join(probe_label(runs[k]["results"].get(task, {})) or "-" for k in keys)
                     + " |")
    return "\n".join(lines) + "\n"


def costs(runs: dict[tuple[str, str], dict]) -> str:
    """Per combination, summed over the tasks: encoding, the task's probe, the control, MDL (seconds and as a share
    of encoding)."""
    lines = ["| encoder, protocol | encode s | probe s | control s | MDL s | probe / encode | control / encode | "
             "MDL / encode | wall s |", "|---|---|---|---|---|---|---|---|---|"]
    for (encoder, protocol), doc in runs.items():
        rs = doc["results"].values()
        enc = sum(r.get("encode_seconds", 0.0) for r in rs)
        ctl = sum(r.get("control_seconds", 0.0) for r in rs)
        mdl = sum(r.get("mdl_seconds", 0.0) for r in rs)
        probe = sum(r.get("classifier_seconds", 0.0) for r in rs) - ctl - mdl
        share = (lambda x: f"{x / enc:.1f}x") if enc > 0 else (lambda x: "-")
        lines.append(f"| {encoder}, {protocol} | {enc:.1f} | {probe:.1f} | {ctl:.1f} | {mdl:.1f} | {share(probe)} | "
                     f"{share(ctl)} | {share(mdl)} | {doc.get('wall_seconds', 0):.0f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probing", default="xprobe", help="probing source: xprobe, generated, generated:<dir>")
    parser.add_argument("--encoders", default="bow_glove,bilstm_max")
    parser.add_argument("--protocols", default="prototype,probing_paper")
    parser.add_argument("--out", type=Path, default=ROOT / "logs" / "probe_protocols")
    parser.add_argument("--tasks", default=",".join(TASKS), help="a subset of the probing tasks")
    parser.add_argument("--paper-row", action="store_true", help="Conneau et al. 2018's BoV-fastText and untrained BiLSTM-max rows beside ours")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    tag = args.probing.replace(":", "_").replace("/", "_")
    runs = {}
    for encoder in args.encoders.split(","):
        for protocol in args.protocols.split(","):
            doc, wall = evaluate(encoder, args.probing, protocol, args.out / f"{tag}__{encoder}__{protocol}.json",
                                 args.tasks.split(","))
            runs[encoder, protocol] = doc
            print(f"{encoder}, {protocol}: {wall:.0f} s", flush=True)
    print(f"\n## probing={args.probing}\n")
    print(table(runs, args.paper_row))
    print(costs(runs))


if __name__ == "__main__":
    main()
