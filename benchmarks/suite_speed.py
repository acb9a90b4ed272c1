"""One evaluation of the per-epoch suite, taken apart: where its seconds go, against an epoch's training, and
whether a change kept every score.

    # the default run's split (its epoch JSONs: the suite before training and after each epoch, the epoch's training)
    python benchmarks/suite_speed.py --run-dir logs/train/runs/<run>
    # the same evaluation twice, in this process, on a checkpoint: tokenising, ids, the encoder's forward passes,
    # each family's classifiers and the rest timed apart (the suite's own path: EvalSuiteCallback.evaluate)
    SENTENCE_DATA=../shared/data python benchmarks/suite_speed.py --checkpoint <run>/checkpoints/init.ckpt
    # every score of two runs' epoch JSONs equal (timings left out)?
    python benchmarks/suite_speed.py --run-dir <after> --same-scores-as <before>
    python benchmarks/suite_speed.py --smoke      # a tiny model and a made-up SentEval tree, in seconds

The split of an evaluation: ``tokenise once a fit`` (the tasks' sentences to tokens, at a fit's first evaluation),
``tokens to ids`` (through that evaluation's vocabulary, inside ``encode``), ``forward`` (the encoder's batches,
``embed_ids``), ``encoding, other`` (padding, copies), ``classifiers`` per task family (a task's seconds less its
encoding), and ``rest`` (vocabulary expansion, results files, set-up: the evaluation's seconds less the rest). The
figures go to a JSON record (``--output``, default ``logs/benchmarks/suite_speed/<time>.json``).
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from lib import records, smoke_inputs
from sentence_lab.datamodules.corpus import CorpusSettings, load_corpus
from sentence_lab.tasks.registry import TASKS
from sentence_lab.text.config_values import plain
from sentence_lab.training.eval_suite import EvalSuiteCallback
from sentence_lab.training.module import SentenceModel

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PROJECT_ROOT", str(ROOT))
DEFAULT_TASKS = ["probing", "similarity", "CR", "TREC"]  # conf/callbacks/default.yaml
TIMING_KEYS = {"seconds", "encode_seconds", "classifier_seconds", "total_seconds", "eval_seconds",
               "epoch_train_seconds", "eval_share_of_epoch", "started", "finished", "written", "git_revision",
               "versions", "updated"}


def family_split(doc: dict) -> dict[str, float]:
    """Seconds of an evaluation by part: encoding (the tasks' encode seconds), each family's classifiers, the rest."""
    split: dict[str, float] = defaultdict(float)
    for task, result in doc["results"].items():
        split["encoding"] += result.get("encode_seconds", 0.0)
        family = TASKS[task].family if task in TASKS else "other"
        split[f"classifiers: {family}"] += result.get("classifier_seconds", 0.0)
    total = doc.get("eval_seconds") or doc.get("total_seconds") or 0.0
    split["rest"] = total - sum(split.values())
    return {k: round(v, 2) for k, v in split.items()}


def run_split(run_dir: Path) -> list[dict]:
    """Per evaluation of a run: its seconds, the epoch's training seconds, the share, the split."""
    rows = []
    for path in sorted((run_dir / "eval").glob("epoch_*.json")):
        doc = json.loads(path.read_text())
        rows.append({"epoch": doc.get("epoch"), "eval_seconds": doc.get("eval_seconds"),
                     "epoch_train_seconds": doc.get("epoch_train_seconds"),
                     "share": doc.get("eval_share_of_epoch"), "sentences_encoded": doc.get("sentences_encoded"),
                     "split": family_split(doc)})
    return rows


def without_timings(value: Any) -> Any:
    """A results document with every timing, date and version left out, recursively."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def score_differences(run_dir: Path, other: Path) -> tuple[int, list[str]]:
    """How many epoch JSONs were compared, and every path at which their results differ (timings left out)."""
    differences: list[str] = []
    compared = 0
    for path in sorted((run_dir / "eval").glob("epoch_*.json")):
        twin = other / "eval" / path.name
        if not twin.is_file():
            differences.append(f"{path.name}: absent from {other}")
            continue
        compared += 1
        a = without_timings(json.loads(path.read_text())["results"])
        b = without_timings(json.loads(twin.read_text())["results"])
        differences += [f"{path.name}: {where}" for where in diff_paths(a, b)]
    return compared, differences


def diff_paths(a: Any, b: Any, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}/{k}: only in one" for k in sorted(set(a) ^ set(b))]
        for k in sorted(set(a) & set(b)):
            out += diff_paths(a[k], b[k], f"{where}/{k}")
        return out
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


class Timed:
    """Wrap ``owner.<name>`` (an instance's method) to add its seconds to ``self.seconds``."""

    def __init__(self, owner: Any, name: str) -> None:
        self.seconds = 0.0
        original: Callable = getattr(owner, name)

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0

        setattr(owner, name, timed)


def evaluation_split(model: SentenceModel, data_dir: Path, tasks: list[str], out_dir: Path,
                     evaluations: int) -> list[dict]:
    """``evaluations`` evaluations of ``model`` through ``EvalSuiteCallback.evaluate`` (the first one tokenises the
    tasks for the fit), tokenising, ids and forward passes timed apart."""
    callback = EvalSuiteCallback(tasks=tasks, data_dir=data_dir, output_dir=out_dir)
    t0 = time.perf_counter()
    callback._load()
    load_seconds = time.perf_counter() - t0
    timers = {"tokenise once a fit": Timed(model, "remember_tokens"), "tokens to ids": Timed(model, "token_ids"),
              "forward": Timed(model, "embed_ids")}
    trainer = SimpleNamespace(default_root_dir=str(out_dir), global_step=0, loggers=[])
    rows = []
    for epoch in range(evaluations):
        before = {name: timer.seconds for name, timer in timers.items()}
        t0 = time.perf_counter()
        doc = callback.evaluate(trainer, model, epoch=epoch)
        seconds = time.perf_counter() - t0
        split = family_split({**doc, "eval_seconds": seconds})
        encoding = split.pop("encoding")
        parts = {name: round(timer.seconds - before[name], 2) for name, timer in timers.items()}
        # the tasks' encode seconds hold the ids and the forward passes; the tokenising happens before the tasks
        rest = round(split.pop("rest") - parts["tokenise once a fit"], 2)
        rows.append({"evaluation": epoch, "load_seconds": round(load_seconds, 2), "eval_seconds": round(seconds, 2),
                     "sentences_encoded": doc.get("sentences_encoded"),
                     "split": {**parts, "encoding, other": round(encoding - parts["tokens to ids"] - parts["forward"],
                                                                 2), **split, "rest": rest}})
    return rows


def print_split(title: str, seconds: float, split: dict[str, float], epoch_seconds: float | None = None) -> None:
    share = f", {100 * seconds / epoch_seconds:.1f}% of the epoch's {epoch_seconds:.0f} s" if epoch_seconds else ""
    print(f"{title}: {seconds:.1f} s{share}")
    for part, value in split.items():
        print(f"  {part:<28} {value:8.2f} s  {100 * value / seconds:5.1f}%")


def smoke_model(root: Path) -> tuple[SentenceModel, Path]:
    """An untrained BiLSTM-max 2 x 16 (random word vectors) on a tiny corpus's vocabulary, and a made-up SentEval
    tree."""
    corpus = smoke_inputs.tiny_corpus(root / "corpus")
    vocab, _, _ = load_corpus(corpus / "train", corpus / "valid", CorpusSettings(), root / "cache")
    encoder = OmegaConf.load(ROOT / "conf" / "encoder" / "bilstm_max.yaml")
    encoder.update({"hidden_dim": 16, "embedding_init": "random"})
    objective = OmegaConf.load(ROOT / "conf" / "objective" / "qt.yaml")
    assert isinstance(objective, DictConfig)  # a mapping file
    objective.pop("defaults", None)
    # as plain dicts, which SentenceModel makes of them first thing
    model = SentenceModel(encoder=plain(encoder), objective=plain(objective), vocab=vocab,
                          optimizer={"_target_": "torch.optim.Adam", "lr": 1e-3})
    return model, smoke_inputs.tiny_senteval(root / "data")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, help="a run's directory: the split of its evaluations")
    parser.add_argument("--same-scores-as", type=Path, help="another run's directory: compare every score")
    parser.add_argument("--checkpoint", type=Path, help="evaluate this checkpoint once, here, timed apart")
    parser.add_argument("--tasks", default=",".join(DEFAULT_TASKS))
    parser.add_argument("--evaluations", type=int, default=2, help="evaluations of the checkpoint (the first "
                        "tokenises the tasks for the fit)")
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("SENTENCE_DATA", "data")))
    records.add_options(parser, "a BiLSTM-max 2 x 16 after one step on a made-up SentEval tree")
    args = parser.parse_args(argv)
    run = records.start("suite_speed", args, ROOT)
    torch.manual_seed(0)
    record: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="suite_speed_") as tmp:
        model = None
        if args.smoke:
            model, args.data_dir = smoke_model(Path(tmp))
            args.tasks = "MR,TREC,STS14,SICKRelatedness"
        elif args.checkpoint:
            model = SentenceModel.load_checkpoint(str(args.checkpoint), map_location="cpu")
        if args.run_dir:
            rows = run_split(args.run_dir)
            record["run"] = {"run_dir": str(args.run_dir), "evaluations": rows}
            for row in rows:
                print_split(f"evaluation after epoch {row['epoch']} ({row['sentences_encoded']} sentences)",
                            row["eval_seconds"], row["split"], row["epoch_train_seconds"])
        if args.same_scores_as:
            compared, differences = score_differences(args.run_dir, args.same_scores_as)
            record["same_scores"] = {"other": str(args.same_scores_as), "files": compared,
                                     "differences": differences}
            print(f"scores against {args.same_scores_as}: {compared} epoch files, "
                  f"{'identical' if not differences else f'{len(differences)} differences'}")
            for line in differences[:20]:
                print(f"  {line}")
        if model is not None:
            rows = evaluation_split(model, args.data_dir, args.tasks.split(","), Path(tmp) / "eval",
                                    args.evaluations)
            record["checkpoint"] = {"checkpoint": str(args.checkpoint or "smoke model"), "evaluations": rows}
            for row in rows:
                print_split(f"evaluation {row['evaluation'] + 1} of {args.checkpoint or 'the smoke model'} "
                            f"({row['sentences_encoded']} sentences; tasks loaded in {row['load_seconds']} s)",
                            row["eval_seconds"], row["split"])
    run.write(record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
