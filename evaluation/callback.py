"""SentEval during training: probing (or any) task curves per epoch, in TensorBoard and in JSON.

    python train.py callbacks=senteval
    python train.py callbacks=senteval callbacks.senteval.tasks=[Length,WordContent,MR]

Every ``every_n_epochs`` training epochs, on rank zero, the callback runs ``evaluation.runner.run_tasks``
(the same code as ``evaluate.py``) on ``pl_module.encode``, logs each task's main score to every attached
logger as ``senteval/<Task>`` with step = epoch, and writes ``<output_dir>/epoch_NNN.json`` (+ ``.md``).
Task data is read once, at ``setup``; an evaluation problem is logged and never stops training.
"""
from __future__ import annotations

import dataclasses
import logging
import random
import time
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch
from lightning.pytorch.callbacks import Callback
from omegaconf import DictConfig, ListConfig, OmegaConf

from .results import ResultsWriter
from .runner import LoadedTask, git_revision, library_versions, load_tasks, params_from_config, run_tasks
from .tasks.base import Split, TaskData
from .tasks.registry import resolve_tasks

log = logging.getLogger(__name__)

SUBSAMPLE_NOTE = ("not SentEval's protocol: each split capped at max_examples_per_split examples (a seeded random "
                  "subset, order kept); scores are not comparable with full-data results")


def _plain(value: Any) -> Any:
    return OmegaConf.to_container(value, resolve=True) if isinstance(value, (DictConfig, ListConfig)) else value


def subsample(data: TaskData, max_examples: int, seed: int) -> TaskData:
    """``data`` with every split longer than ``max_examples`` cut to a seeded random subset (order kept)."""
    splits, cut = {}, {}
    for i, (name, split) in enumerate(data.splits.items()):
        if len(split) <= max_examples:
            splits[name] = split
            continue
        keep = np.sort(np.random.default_rng([seed, i]).choice(len(split), size=max_examples, replace=False))
        splits[name] = Split(a=[split.a[j] for j in keep], y=split.y[keep],
                             b=None if split.b is None else [split.b[j] for j in keep])
        cut[name] = f"{max_examples} of {len(split)}"
    if not cut:
        return data
    return TaskData(splits=splits, nclasses=data.nclasses, info={**data.info, "subsampled": cut})


class SentEvalCallback(Callback):
    """Run SentEval tasks on the model being trained every ``every_n_epochs`` epochs.

    Args:
        tasks: task and group names, as for ``evaluate.py`` (default: the ten probing tasks).
        data_dir: the data root (SentEval layout under ``senteval/``, probing under ``probing/``).
        params: the ``evaluation`` config (conf/evaluation/prototype.yaml by default); ``encode_batch_size``
            is read from it too.
        output_dir: where ``epoch_NNN.json`` go; default ``<trainer.default_root_dir>/senteval``.
        every_n_epochs: evaluate after epochs n-1, 2n-1, ... (logged step = the 0-based epoch just finished).
        max_examples_per_split: ``None`` = SentEval's protocol on all the data; a number caps every split
            (recorded in the JSON, per task and under ``protocol`` and ``subsample``).
        log_prefix: logged names are ``<log_prefix>/<Task>``.
        vocab_expansion: evaluate with vocabulary expansion, as ``evaluate.py`` does a checkpoint (fit anew
            for each evaluation, removed afterwards); skipped, with the reason in the JSON, when impossible.
    """

    def __init__(self, tasks: Any = "probing", data_dir: str | Path = "data", params: Mapping | None = None,
                 output_dir: str | Path | None = None, every_n_epochs: int = 1,
                 max_examples_per_split: int | None = None, subsample_seed: int = 1111,
                 log_prefix: str = "senteval", vocab_expansion: bool = True) -> None:
        super().__init__()
        self.vocab_expansion = bool(vocab_expansion)
        tasks = _plain(tasks)
        self.task_names = resolve_tasks(tasks)  # a typo fails here, before training; reads no data
        self.data_dir = Path(data_dir)
        self.params_cfg = dict(_plain(params) or {})
        self.params = params_from_config(self.params_cfg)
        self.encode_batch_size = int(self.params_cfg.get("encode_batch_size", 128))
        self.output_dir = Path(output_dir) if output_dir else None
        if int(every_n_epochs) < 1:
            raise ValueError(f"every_n_epochs must be >= 1, got {every_n_epochs}")
        self.every_n_epochs = int(every_n_epochs)
        if max_examples_per_split is not None and int(max_examples_per_split) < 1:
            raise ValueError(f"max_examples_per_split must be >= 1 or null, got {max_examples_per_split}")
        self.max_examples_per_split = None if max_examples_per_split is None else int(max_examples_per_split)
        self.subsample_seed = int(subsample_seed)
        self.log_prefix = log_prefix
        self._loaded: list[LoadedTask] | None = None
        self.history: dict[int, dict[str, float | None]] = {}  # epoch -> task -> main score

    # ---- data, once ---------------------------------------------------------------------------
    def setup(self, trainer, pl_module, stage: str) -> None:
        if stage != "fit" or self._loaded is not None or not trainer.is_global_zero:
            return
        t0 = time.perf_counter()
        self._loaded = load_tasks(self.task_names, self.data_dir)
        missing = [t for t in self._loaded if t.missing]
        if missing:
            log.warning("SentEval callback: no data for %s under %s: skipped (%s)",
                        ", ".join(t.spec.name for t in missing), self.data_dir, missing[0].error)
        for task in self._loaded:
            if task.error is not None and not task.missing:
                log.warning("SentEval callback: %s: skipped", task.error)
        if self.max_examples_per_split is not None:
            for task in self._loaded:
                if task.data is not None:
                    task.data = subsample(task.data, self.max_examples_per_split, self.subsample_seed)
            log.warning("SentEval callback: max_examples_per_split=%d: %s", self.max_examples_per_split,
                        SUBSAMPLE_NOTE)
        ready = [t.spec.name for t in self._loaded if t.data is not None]
        log.info("SentEval callback: %d tasks loaded in %.1fs (%s); evaluating every %d epoch(s)", len(ready),
                 time.perf_counter() - t0, ", ".join(ready) or "none", self.every_n_epochs)

    def teardown(self, trainer, pl_module, stage: str) -> None:
        if stage == "fit":
            self._loaded = None

    # ---- every n epochs -----------------------------------------------------------------------
    def on_train_epoch_end(self, trainer, pl_module) -> None:
        epoch = int(trainer.current_epoch)
        if trainer.sanity_checking or (epoch + 1) % self.every_n_epochs:
            return
        if trainer.is_global_zero:
            try:
                self.evaluate(trainer, pl_module, epoch)
            except Exception as err:  # noqa: BLE001 - evaluation must never stop training
                log.error("SentEval callback: evaluation after epoch %d failed: %s: %s", epoch,
                          type(err).__name__, err, exc_info=log.isEnabledFor(logging.DEBUG))
        if trainer.world_size > 1:
            trainer.strategy.barrier("senteval_callback")

    def _meta(self, trainer, pl_module, epoch: int) -> dict:
        describe = getattr(pl_module, "describe", None)
        protocol = {**dataclasses.asdict(self.params), "encode_batch_size": self.encode_batch_size,
                    "max_examples_per_split": self.max_examples_per_split}
        meta = {"protocol": protocol,
                "encoder": {"name": f"training:epoch_{epoch:03d}", **(describe() if callable(describe) else {}),
                            "source": "SentEvalCallback during training", "epoch": epoch,
                            "global_step": int(trainer.global_step)},
                "epoch": epoch, "tasks": list(self.task_names), "data_dir": str(self.data_dir),
                "versions": library_versions(), "git_revision": git_revision()}
        if self.max_examples_per_split is not None:
            meta["subsample"] = {"max_examples_per_split": self.max_examples_per_split,
                                 "seed": self.subsample_seed, "note": SUBSAMPLE_NOTE}
        return meta

    def evaluate(self, trainer, pl_module, epoch: int) -> dict:
        """Run the tasks now on ``pl_module``; write the JSON, log the scores; return the results document."""
        if self._loaded is None:  # fit without setup (e.g. a direct call): load now, once
            self.setup(trainer, pl_module, "fit")
        out_dir = self.output_dir or Path(trainer.default_root_dir) / "senteval"
        if self.vocab_expansion and hasattr(pl_module, "expand_vocabulary"):
            pl_module.expand_vocabulary()  # fit on this epoch's weights; describe() records it; undone below
        writer = ResultsWriter(out_dir / f"epoch_{epoch:03d}.json", self._meta(trainer, pl_module, epoch))
        writer.flush()
        # run_tasks drops each task's data when done with it: give it copies, keep the loaded data.
        loaded = [dataclasses.replace(t) for t in self._loaded]
        modes = {m: m.training for m in pl_module.modules()}
        rng = (random.getstate(), np.random.get_state(), torch.get_rng_state(),
               torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None)
        pl_module.eval()
        try:
            doc = run_tasks(loaded, pl_module, self.params, writer, console=None,
                            encode_batch_size=self.encode_batch_size)
        except Exception as err:  # noqa: BLE001 - e.g. NaN embeddings (EncoderOutputError): keep training
            writer.update(aborted=f"{type(err).__name__}: {err}")
            log.error("SentEval callback: epoch %d: %s: %s (partial results in %s)", epoch, type(err).__name__,
                      err, writer.path)
            doc = writer.doc
        finally:
            if hasattr(pl_module, "clear_vocabulary_expansion"):
                pl_module.clear_vocabulary_expansion()
            for module, mode in modes.items():
                module.training = mode
            random.setstate(rng[0])
            np.random.set_state(rng[1])
            torch.set_rng_state(rng[2])
            if rng[3] is not None:
                torch.cuda.set_rng_state_all(rng[3])
        scores = {name: r.get("main_score") for name, r in doc["results"].items()}
        self.history[epoch] = scores
        metrics = {f"{self.log_prefix}/{name}": float(s) for name, s in scores.items()
                   if s is not None and np.isfinite(s)}
        if metrics:
            for logger in trainer.loggers:
                try:
                    logger.log_metrics(metrics, step=epoch)
                except Exception as err:  # noqa: BLE001
                    log.error("SentEval callback: logging to %s failed: %s", type(logger).__name__, err)
        for name, message in doc.get("errors", {}).items():
            log.error("SentEval callback: epoch %d: %s", epoch, message)
        shown = ", ".join(f"{name} {s:.2f}" if s is not None else f"{name} n/a" for name, s in scores.items())
        log.info("SentEval epoch %d: %s -> %s", epoch, shown or "no results", writer.path)
        return doc
