"""The fast curve preset (``callbacks/eval_suite=curves``) against the full protocol: its cost, and how well it orders
checkpoints as the full protocol does, over every epoch of several seeds of several objectives.

    # the checkpoints: every epoch of three seeds of two objectives, the full protocol run by each run's own suite
    SENTENCE_DATA=../shared/data python train.py -m seed=1,2,3 'callbacks=[default,epoch_checkpoints]' \
        hydra.sweep.dir=logs/agreement/qt
    SENTENCE_DATA=../shared/data python train.py -m objective=nli seed=1,2,3 trainer.max_epochs=2 \
        'callbacks=[default,epoch_checkpoints]' hydra.sweep.dir=logs/agreement/nli
    # the preset on each of those checkpoints, and the agreement
    SENTENCE_DATA=../shared/data python benchmarks/curve_preset_agreement.py logs/agreement/qt logs/agreement/nli
    python benchmarks/curve_preset_agreement.py --smoke   # six untrained models on a made-up SentEval tree

Each run's ``eval/epoch_NNN.json`` (the per-epoch suite, full protocol) is matched with the checkpoint of the same
weights (``init.ckpt`` for epoch 0, ``epoch_{N-1:03d}.ckpt`` of ``callbacks=[default,epoch_checkpoints]`` after N
epochs), which the preset then scores through the callback's own path (``EvalSuiteCallback.evaluate``). Checkpoints are
compared only inside a stratum, the same objective and epoch (``benchmarks/lib/agreement.py``): per task
Kendall's tau-b, the share of the pairs the full protocol's paired test (its per-item predictions, p < 0.05 before any
correction) calls different that the preset orders the same way, and the largest absolute difference of a
checkpoint's two scores. Prints a table per task and the cost (seconds per evaluation against an epoch's training).
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import tempfile
import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
import yaml
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from lib import records, smoke_inputs
from lib.agreement import SAME_ORDER_GOAL, TAU_GOAL, agreement, within_pairs
from sentence_lab.datamodules.corpus import CorpusSettings, load_corpus
from sentence_lab.evaluation.results import TaskResult, items_path, read_items, read_results
from sentence_lab.reporting.paired import aligned, metric_for, permutation_p
from sentence_lab.text.config_values import plain
from sentence_lab.training.eval_suite import EvalSuiteCallback
from sentence_lab.training.module import SentenceModel

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("PROJECT_ROOT", str(ROOT))
ALPHA = 0.05
SMOKE_PARAMS = {"kfold": 2, "l2_grid": [1e-3], "max_epoch": 4, "epoch_size": 1}


# A results file and its per-item file are read once, however many pairs, tasks and tables use them.
results_of = functools.cache(read_results)
items_of = functools.cache(lambda results_file: read_items(items_path(results_file)))


@dataclass
class Checkpoint:
    """One checkpoint: its run, stratum, the full protocol's results file and, once scored, the preset's."""

    run: str
    objective: str
    seed: Any
    epoch: int
    path: Path | None  # the checkpoint file (None in the smoke run: the model is in memory)
    full_file: Path
    preset_file: Path | None = None
    preset_seconds: float | None = None

    @property
    def stratum(self) -> Hashable:
        return self.objective, self.epoch


def checkpoint_of(run_dir: Path, epoch: int) -> Path:
    """The checkpoint holding the weights the suite scored after ``epoch`` epochs."""
    return run_dir / "checkpoints" / ("init.ckpt" if epoch == 0 else f"epoch_{epoch - 1:03d}.ckpt")


def run_dirs(roots: list[Path]) -> list[Path]:
    """Every training run below the given folders (a folder with ``.hydra/config.yaml`` and ``eval/``)."""
    return sorted({p.parent.parent for root in roots for p in root.glob("**/.hydra/config.yaml")
                   if (p.parent.parent / "eval").is_dir()})


def find_checkpoints(roots: list[Path]) -> tuple[list[Checkpoint], list[str]]:
    """The full protocol's evaluations with their checkpoints, and what was skipped (and why)."""
    found, skipped = [], []
    for run_dir in run_dirs(roots):
        config = yaml.safe_load((run_dir / ".hydra" / "config.yaml").read_text()) or {}
        hydra_file = run_dir / ".hydra" / "hydra.yaml"
        choices = (yaml.safe_load(hydra_file.read_text()) or {}).get("hydra", {}).get("runtime", {}).get(
            "choices", {}) if hydra_file.is_file() else {}
        for full_file in sorted((run_dir / "eval").glob("epoch_*.json")):
            doc = results_of(full_file)
            epoch = int(doc.get("epoch", full_file.stem.split("_")[-1]))
            if doc.get("preset") or doc.get("subsample"):
                skipped.append(f"{full_file}: not the full protocol (a preset or a subsample)")
                continue
            ckpt = checkpoint_of(run_dir, epoch)
            if not ckpt.is_file():
                skipped.append(f"{full_file}: no {ckpt.name} (train with 'callbacks=[default,epoch_checkpoints]')")
                continue
            found.append(Checkpoint(str(run_dir), str(choices.get("objective", "?")), config.get("seed"), epoch,
                                    ckpt, full_file))
    return found, skipped


def preset_callback(preset: str, data_dir: Path, out_dir: Path) -> EvalSuiteCallback:
    """The per-epoch suite as ``callbacks/eval_suite=<preset>`` composes it."""
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[f"callbacks/eval_suite={preset}"])
    return instantiate(cfg.callbacks.eval_suite, data_dir=str(data_dir), output_dir=str(out_dir))


def score(callback: EvalSuiteCallback, model: Any, checkpoint: Checkpoint, out_dir: Path) -> None:
    """The preset's scores of ``model`` (the checkpoint's weights), through the callback's own path."""
    callback.output_dir = out_dir
    trainer = SimpleNamespace(default_root_dir=str(out_dir), global_step=0, loggers=[])
    started = time.perf_counter()
    callback.evaluate(trainer, model, checkpoint.epoch)
    checkpoint.preset_seconds = time.perf_counter() - started
    checkpoint.preset_file = out_dir / f"epoch_{checkpoint.epoch:03d}.json"


def scored_before(checkpoint: Checkpoint, out_dir: Path, preset: str) -> bool:
    """Whether ``out_dir`` (``--scores-dir`` of an earlier call) holds this checkpoint's complete preset results:
    then they are read instead of scored again (their ``eval_seconds`` as the cost)."""
    path = out_dir / f"epoch_{checkpoint.epoch:03d}.json"
    try:
        # the per-epoch document's own fields (preset, eval_seconds), which ResultsDocument does not name
        doc: Mapping[str, Any] = read_results(path)
    except (OSError, ValueError):
        return False
    complete = (doc.get("preset") or {}).get("name") == preset and doc.get("eval_seconds") is not None
    if complete:
        checkpoint.preset_file, checkpoint.preset_seconds = path, float(doc["eval_seconds"])
    return complete


def called_different(checkpoints: list[Checkpoint], task: str, resamples: int) -> list[tuple[int, int]]:
    """The pairs inside a stratum whose full-protocol predictions differ by the paired test (p < 0.05)."""
    out = []
    for i, j in within_pairs([c.stratum for c in checkpoints]):
        a, b = (items_of(checkpoints[k].full_file).get(task) for k in (i, j))
        if a is None or b is None or "pred" not in a or "pred" not in b:
            continue
        aligned(a, b, task)
        result = results_of(checkpoints[i].full_file)["results"][task]
        metric = metric_for(result["regime"], result["main_metric"])
        if permutation_p(a["pred"], b["pred"], a, metric, resamples=resamples) < ALPHA:
            out.append((i, j))
    return out


def different_pairs(checkpoints: list[Checkpoint], task: str, resamples: int,
                    cache: Path | None) -> list[tuple[int, int]]:
    """``called_different``, kept in ``cache`` (a JSON file in ``--scores-dir``) by the two results files' paths: the
    full protocol's tests do not depend on the preset, so a second preset reads them."""
    known = json.loads(cache.read_text()) if cache is not None and cache.is_file() else {}
    key = f"{task} {resamples} " + " ".join(str(c.full_file) for c in checkpoints)
    if key not in known:
        known[key] = called_different(checkpoints, task, resamples)
        if cache is not None:
            cache.write_text(json.dumps(known))
    return [tuple(pair) for pair in known[key]]


def main_score(result: TaskResult) -> float:
    """A task's main score where it is known to be set (``agreement_rows`` keeps the tasks scored everywhere)."""
    value = result["main_score"]
    assert value is not None
    return value


def agreement_rows(checkpoints: list[Checkpoint], resamples: int, cache: Path | None = None) -> list[dict]:
    """Per task the preset scored on every checkpoint: its agreement with the full protocol."""
    full = [results_of(c.full_file)["results"] for c in checkpoints]
    cheap = [results_of(c.preset_file)["results"] for c in checkpoints]
    tasks = [t for t in cheap[0] if all(doc.get(t, {}).get("main_score") is not None for doc in full + cheap)]
    rows = []
    for task in tasks:
        found = agreement(task, [main_score(doc[task]) for doc in full], [main_score(doc[task]) for doc in cheap],
                          [c.stratum for c in checkpoints], different_pairs(checkpoints, task, resamples, cache))
        rows.append(found.as_dict())
        share = f"{100 * found.same_order_share:.0f}%" if found.different else "-"
        print(f"| {task} | {found.tau:.2f} | {found.pairs} | {found.different} | {share} | "
              f"{found.max_abs_difference:.2f} | {'yes' if found.meets_goal else 'no'} |", flush=True)
    return rows


def cost(checkpoints: list[Checkpoint]) -> dict[str, dict]:
    """Per objective: median seconds of an evaluation, full and preset, and of an epoch's training."""
    out = {}
    for objective in sorted({c.objective for c in checkpoints}):
        mine = [c for c in checkpoints if c.objective == objective]
        # the per-epoch documents' own fields (eval_seconds, epoch_train_seconds), which ResultsDocument does not name
        docs: list[Mapping[str, Any]] = [results_of(c.full_file) for c in mine]
        full = [d["eval_seconds"] for d in docs if d.get("eval_seconds")]
        epochs = [d["epoch_train_seconds"] for d in docs if d.get("epoch_train_seconds")]
        preset = [c.preset_seconds for c in mine if c.preset_seconds]
        median = lambda xs: statistics.median(xs) if xs else None  # noqa: E731
        row = {"full_eval_s": median(full), "preset_eval_s": median(preset), "epoch_train_s": median(epochs)}
        row = {k: None if v is None else round(v, 2) for k, v in row.items()}
        if row["epoch_train_s"]:
            for kind in ("full", "preset"):
                if row[f"{kind}_eval_s"]:
                    row[f"{kind}_share_of_epoch"] = row[f"{kind}_eval_s"] / row["epoch_train_s"]
        out[objective] = row
        print(f"{objective}: full evaluation {row['full_eval_s']} s, preset {row['preset_eval_s']} s, an epoch's "
              f"training {row['epoch_train_s']} s (medians; the preset's includes tokenising, once per checkpoint)")
    return out


def smoke_checkpoints(root: Path) -> list[Checkpoint]:
    """Six untrained BiLSTM-max models (two widths x three seeds) scored by a small full protocol and a preset on a
    made-up SentEval tree."""
    corpus = smoke_inputs.tiny_corpus(root / "corpus")
    vocab, _, _ = load_corpus(corpus / "train", corpus / "valid", CorpusSettings(), root / "cache")
    data = smoke_inputs.tiny_senteval(root / "data")
    objective = OmegaConf.load(ROOT / "conf" / "objective" / "qt.yaml")
    assert isinstance(objective, DictConfig)  # a mapping file
    objective.pop("defaults", None)
    tasks = ["MR", "TREC", "STS14"]
    full = EvalSuiteCallback(tasks=tasks, data_dir=data, params=SMOKE_PARAMS, vocab_expansion=False)
    preset = EvalSuiteCallback(tasks=tasks, data_dir=data, params=SMOKE_PARAMS, max_examples_per_split=30,
                               preset="curves", vocab_expansion=False)
    out = []
    for width in (8, 16):
        for seed in (1, 2, 3):
            torch.manual_seed(seed)
            encoder = OmegaConf.load(ROOT / "conf" / "encoder" / "bilstm_max.yaml")
            encoder.update({"hidden_dim": width, "embedding_init": "random"})
            # as plain dicts, which SentenceModel makes of them first thing
            model = SentenceModel(encoder=plain(encoder), objective=plain(objective), vocab=vocab,
                                  optimizer={"_target_": "torch.optim.Adam", "lr": 1e-3})
            run = root / f"width{width}_seed{seed}"
            checkpoint = Checkpoint(str(run), f"width {width}", seed, 0, None, run / "full" / "epoch_000.json")
            full.output_dir = run / "full"
            full.evaluate(SimpleNamespace(default_root_dir=str(run), global_step=0, loggers=[]), model, 0)
            score(preset, model, checkpoint, run / "preset")
            out.append(checkpoint)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", type=Path, help="sweep or run folders (train.py with epoch checkpoints)")
    parser.add_argument("--preset", default="curves", help="conf/callbacks/eval_suite/<preset>.yaml")
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("SENTENCE_DATA", "data")))
    parser.add_argument("--resamples", type=int, default=500,
                        help="permutations of the paired test for correlations (accuracies: McNemar's exact test)")
    parser.add_argument("--scores-dir", type=Path, default=None,
                        help="where the preset's results files go (default: a temporary folder); those already "
                        "there from an earlier call are read, not scored again")
    records.add_options(parser, "six untrained models, a small full protocol and a preset on a made-up tree")
    args = parser.parse_args(argv)
    run = records.start("curve_preset_agreement", args, ROOT)
    with tempfile.TemporaryDirectory(prefix="curve_preset_") as tmp:
        scores_dir = args.scores_dir or Path(tmp)
        skipped: list[str] = []
        if run.smoke:
            checkpoints = smoke_checkpoints(Path(tmp))
        else:
            if not args.runs:
                parser.error("give the sweep folders of the checkpoints (or --smoke)")
            checkpoints, skipped = find_checkpoints(args.runs)
            for line in skipped:
                print(f"skipped: {line}")
            if not checkpoints:
                parser.error("no full-protocol evaluation with its checkpoint under the folders given")
            callback = preset_callback(args.preset, args.data_dir, scores_dir)
            for checkpoint in checkpoints:
                run_path = Path(checkpoint.run)
                out_dir = scores_dir / f"{run_path.parent.name}_{run_path.name}"
                if scored_before(checkpoint, out_dir, args.preset):
                    print(f"{checkpoint.objective} seed {checkpoint.seed} epoch {checkpoint.epoch}: scored before, "
                          f"in {out_dir}")
                    continue
                model = SentenceModel.load_checkpoint(str(checkpoint.path), map_location="cpu")
                score(callback, model, checkpoint, out_dir)
                print(f"{checkpoint.objective} seed {checkpoint.seed} epoch {checkpoint.epoch}: preset in "
                      f"{checkpoint.preset_seconds:.1f} s", flush=True)
        strata = sorted({str(c.stratum) for c in checkpoints})
        print(f"{len(checkpoints)} checkpoints in {len(strata)} strata (objective, epoch)\n")
        print("| task | tau | pairs | called different | ordered the same | largest abs difference | goal |\n"
              "|---|---|---|---|---|---|---|")
        rows = agreement_rows(checkpoints, 200 if run.smoke else args.resamples,
                              None if run.smoke else scores_dir / "full_protocol_tests.json")
        print(f"\ngoal: tau >= {TAU_GOAL} and >= {100 * SAME_ORDER_GOAL:.0f}% of the pairs called different")
        costs = cost(checkpoints)
        run.write({"preset": args.preset, "checkpoints": [
            {"run": c.run, "objective": c.objective, "seed": c.seed, "epoch": c.epoch,
             "preset_seconds": c.preset_seconds,
             "full": {t: r.get("main_score") for t, r in results_of(c.full_file)["results"].items()},
             "preset_scores": {t: r.get("main_score") for t, r in results_of(c.preset_file)["results"].items()}}
            for c in checkpoints], "tasks": rows, "cost": costs, "skipped": skipped, "alpha": ALPHA})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
