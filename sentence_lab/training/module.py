"""One LightningModule that pairs any encoder with any objective and trains it (its parts and how it encodes:
``sentence_lab.training.inference``)."""
from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import torch
from hydra.utils import instantiate
from lightning import LightningModule
from torch import nn

from sentence_lab.checkpoints.epoch_end import as_after_epoch_end
from sentence_lab.checkpoints.legacy import saved_vocabs
from sentence_lab.checkpoints.non_finite_weights import refuse_non_finite
from sentence_lab.encoders.base import SentenceEncoder
from sentence_lab.encoders.pretrained.encoder import PretrainedEncoder
from sentence_lab.encoders.transformer.encoder import TransformerEncoder
from sentence_lab.objectives.contract import (
    CollectsCorpusMetrics,
    EvaluatesDifferently,
    LearnsFromUnigramCounts,
    batch_size,
)
from sentence_lab.objectives.metrics import RunningMeans
from sentence_lab.text import Vocab
from sentence_lab.training.inference import MODEL_FOLDER_KEY, SentenceInference
from sentence_lab.training.trainer_state import datamodule_of, log_every_n_steps_of

log = logging.getLogger(__name__)

PROGRESS_BAR_METRICS = ("loss", "context_acc", "acc", "token_acc", "hinge_acc")


def without_decay_on_norms_and_biases(group: dict) -> list[dict]:
    """An optimiser group split as transformers are fine-tuned: its biases and normalisation weights (every parameter
    of one dimension) in a group of their own without weight decay, the matrices with the optimiser's. For models
    with a transformer encoder (``SentenceModel.has_transformer_encoders``): other models keep their groups as they
    were, so their checkpoints resume."""
    flat = [p for p in group["params"] if p.ndim <= 1]
    rest = [p for p in group["params"] if p.ndim > 1]
    return [{**group, "params": rest}, {**group, "params": flat, "weight_decay": 0.0}]


class SentenceModel(SentenceInference, LightningModule):
    """``encoder`` and ``objective`` are Hydra configs (``_target_``); the objective owns its extra parts.

    The vocabulary and tokenizer travel in the checkpoint, so a loaded model tokenises as in training.
    """

    def __init__(self, encoder: dict, objective: dict | None, vocabs: Mapping[str, Vocab | list[str]] | None = None,
                 tokenizers: Mapping[str, dict] | None = None, optimizer: dict | None = None,
                 vocab: Vocab | list[str] | None = None, tokenizer: dict | None = None,
                 scheduler: dict | None = None, encoder_lr_scale: float = 1.0, encoder_frozen_steps: int = 0) -> None:
        """``vocabs``/``tokenizers`` map each side (``source``, and ``target`` for objectives with a second
        vocabulary; see ``sentence_lab.objectives.contract``) to its vocabulary and tokenizer settings. ``vocab`` and
        ``tokenizer`` are the one-side forms (and what checkpoints written before ``vocabs`` hold). ``scheduler``:
        a per-step learning-rate schedule, a Hydra config called with ``optimizer`` and ``total_steps`` (the run's
        planned optimiser steps), e.g. ``sentence_lab.training.schedules.warmup_linear_decay``; None: a constant rate.
        ``encoder_lr_scale``: the encoders' parameters learn at this multiple of the optimiser's rate (the objective's
        other parts, decoders or classifiers, at the rate itself). ``encoder_frozen_steps``: for the first this many
        optimiser steps the encoders do not move (their gradients are dropped before the step, so Adam's moments
        start when they do) while the rest of the model learns to read the untrained encoder's vectors."""
        super().__init__()
        if encoder_lr_scale < 0 or encoder_frozen_steps < 0:
            raise ValueError(f"model.encoder_lr_scale={encoder_lr_scale} and model.encoder_frozen_steps="
                             f"{encoder_frozen_steps}: use values >= 0")
        self.save_hyperparameters(self._build_parts(
            encoder, objective, vocabs, tokenizers, vocab, tokenizer, optimizer=optimizer, scheduler=scheduler,
            encoder_lr_scale=encoder_lr_scale, encoder_frozen_steps=encoder_frozen_steps))
        # Metrics are averaged here and handed to Lightning every log_every_n_steps steps and at epoch
        # ends: a self.log call per metric per step costs about a millisecond of Lightning bookkeeping.
        # The training means leave out a batch whose loss is not finite (its step is skipped:
        # sentence_lab.training.non_finite).
        self._window, self._epoch = RunningMeans(skip_non_finite=True), RunningMeans(skip_non_finite=True)
        self._val = RunningMeans()
        self._test: dict[int, RunningMeans] = {}
        self._cut_epoch_end: int | None = None  # resumed from a save during this epoch's end (checkpoints.epoch_end)

    # ---- training -------------------------------------------------------------------------
    def on_fit_start(self) -> None:
        """A fresh run (not a resumed one) starts the decoders that ask for it from the data's word frequencies."""
        if self.trainer.ckpt_path is None and isinstance(self.objective, LearnsFromUnigramCounts):
            counts = getattr(datamodule_of(self.trainer), "token_counts", None)
            if counts is None:
                log.warning("output_bias=log_unigram: %s has no token_counts(); the decoders keep a zero bias",
                            type(datamodule_of(self.trainer)).__name__)
                return
            self.objective.init_from_unigram_counts({side: torch.from_numpy(np.asarray(c))
                                                     for side, c in counts().items()})

    def on_train_start(self) -> None:
        """Resumed from a checkpoint saved during an epoch's end (before the suite, or at a stop in it): the epoch's
        training means, which that end had not logged yet, go to the loggers now, at the step and epoch Lightning
        gives them (rank 0's, which the checkpoint holds); ``on_train_epoch_start`` then empties them."""
        epoch, self._cut_epoch_end = self._cut_epoch_end, None
        if epoch is None or not self._epoch or not self.trainer.is_global_zero:
            return
        metrics: dict[str, float | int] = {f"train/{name}_epoch": float(value)
                                           for name, value in self._epoch.means().items()}
        step = int(self.trainer.global_step) - 1  # Lightning logs an epoch's end at its last step's number
        for logger in self.trainer.loggers:
            logger.log_metrics({**metrics, "epoch": epoch - 1}, step=step)
            logger.save()

    def on_train_epoch_start(self) -> None:
        """Each epoch's means start empty (a resume that Lightning counts past an epoch's end skips that end)."""
        self._epoch.reset()
        self._window.reset()

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        out = self.objective(batch)
        size = batch_size(batch)
        self._window.update(out, size)
        self._epoch.update(out, size)
        if (self.global_step + 1) % max(1, log_every_n_steps_of(self.trainer)) == 0:
            # train/<metric>_step: the mean over the steps since the last point.
            self._log_means(self._window, "train", "_step", on_step=True)
            self._window.reset()
        return out["loss"]

    def on_train_epoch_end(self) -> None:
        if self._epoch:
            self._log_means(self._epoch, "train", "_epoch", on_step=False)
        self._epoch.reset()
        self._window.reset()

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._val.update(self._evaluate_batch(batch), batch_size(batch))

    def on_validation_epoch_end(self) -> None:
        if self._val:
            self._log_means(self._val, "val", "", on_step=False)
        for name, value in self._corpus_metrics().items():
            self.log(f"val/{name}", value, prog_bar=name == "bleu", sync_dist=True)
        self._val.reset()

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int, dataloader_idx: int = 0) -> None:
        self._test.setdefault(dataloader_idx, RunningMeans()).update(self._evaluate_batch(batch), batch_size(batch))

    def on_test_epoch_end(self) -> None:
        names = list(getattr(datamodule_of(self.trainer), "test_names", []) or [])
        for idx, meter in sorted(self._test.items()):
            name = names[idx] if idx < len(names) else str(idx)
            for metric, value in meter.means().items():
                self.log(f"test/{name}/{metric}", value, on_step=False, on_epoch=True, add_dataloader_idx=False,
                         sync_dist=True)
        self._corpus_metrics()  # drop what decoding objectives collected on the test sets
        self._test = {}

    def _evaluate_batch(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """An objective may evaluate differently from training (e.g. also decode for BLEU)."""
        if isinstance(self.objective, EvaluatesDifferently):
            return self.objective.evaluation_step(batch)
        return self.objective(batch)

    def _corpus_metrics(self) -> dict[str, float]:
        """Metrics over a whole evaluation set (BLEU), from objectives that collect them."""
        return self.objective.corpus_metrics() if isinstance(self.objective, CollectsCorpusMetrics) else {}

    def _log_means(self, meter: RunningMeans, stage: str, suffix: str, on_step: bool) -> None:
        for name, value in meter.means().items():
            self.log(f"{stage}/{name}{suffix}", value, prog_bar=name in PROGRESS_BAR_METRICS,
                     on_step=on_step, on_epoch=not on_step, sync_dist=not on_step)

    def compile_encoders(self, **options: Any) -> int:
        """``torch.compile`` every sentence encoder the objective holds, in place (``nn.Module.compile``: the
        parameters, state_dict keys and checkpoints are unchanged), and return how many. Shapes are dynamic
        unless ``options`` say otherwise, so the batches' lengths and the recurrent encoders' length buckets
        share one graph instead of compiling one per length. The LSTM and GRU kernels themselves run as they
        do uncompiled (TorchDynamo does not trace recurrent modules); what is compiled around them is the word
        lookup, the pooling and the layers after them."""
        options = {"dynamic": True, **options}
        encoders = [m for m in self.objective.modules() if isinstance(m, SentenceEncoder)]
        for encoder in encoders:
            encoder.compile(**options)
        return len(encoders)

    def encoder_parameters(self) -> list[nn.Parameter]:
        """The trainable parameters of every sentence encoder the objective holds (``f``, QT's ``g``, J_bi's
        second language's), each once."""
        seen: dict[int, nn.Parameter] = {}
        for module in self.objective.modules():
            if isinstance(module, SentenceEncoder):
                seen.update((id(p), p) for p in module.parameters() if p.requires_grad)
        return list(seen.values())

    def has_transformer_encoders(self) -> bool:
        """Whether the objective holds a transformer (trained from scratch or pre-trained): its optimiser groups then
        leave biases and LayerNorm weights out of the weight decay."""
        return any(isinstance(m, (TransformerEncoder, PretrainedEncoder)) for m in self.objective.modules())

    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        """``encoder_frozen_steps``: drop the gradients of the optimiser's encoder group (after DDP's all-reduce,
        before clipping) while the warm-up lasts; an optimiser skips a parameter without a gradient."""
        if self.global_step < self.hparams.get("encoder_frozen_steps", 0):
            for group in optimizer.param_groups:
                if group.get("encoder"):
                    for param in group["params"]:
                        param.grad = None

    def configure_optimizers(self):
        if not self.hparams.optimizer:
            raise ValueError("no optimizer configured: set model.optimizer (e.g. torch.optim.Adam)")
        encoder_ids = {id(p) for p in self.encoder_parameters()}
        groups = [{"params": [p for p in self.parameters() if p.requires_grad and id(p) not in encoder_ids]},
                  {"params": [p for p in self.parameters() if id(p) in encoder_ids], "encoder": True}]
        make = instantiate(self.hparams.optimizer, _partial_=True)
        optimizer = make([g for g in groups if g["params"]])
        if optimizer.defaults.get("weight_decay", 0.0) and self.has_transformer_encoders():
            # as transformers are fine-tuned: no decay on biases and LayerNorm weights (AdamW decays by default)
            optimizer = make([part for group in groups for part in without_decay_on_norms_and_biases(group)
                              if part["params"]])
        for group in optimizer.param_groups:
            if group.get("encoder"):
                group["lr"] *= self.hparams.get("encoder_lr_scale", 1.0)
        if not self.hparams.get("scheduler"):
            return optimizer
        scheduler = instantiate(self.hparams.scheduler, optimizer=optimizer,
                                total_steps=int(self.trainer.estimated_stepping_batches))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        # Weights holding NaN or inf are never written. Refused here, on every rank alike (the weights are the same on
        # each), so that no rank waits at the save's barrier for one that gave up; AtomicCheckpointIO checks again.
        refuse_non_finite(checkpoint.get("state_dict", {}), "checkpoint")
        checkpoint["vocabs"] = {side: v.itos for side, v in self.vocabs.items()}
        folder = self.model_folder_files()
        if folder:  # a pre-trained encoder's config and tokenizer: the run reloads without its folder
            checkpoint[MODEL_FOLDER_KEY] = folder
        # The random streams, so that a run resumed from this point continues as if never stopped.
        # The running means of the epoch so far: a resumed epoch reports the same means as an uninterrupted one.
        checkpoint["running_means"] = {"window": self._window.state_dict(), "epoch": self._epoch.state_dict()}
        name, keys, pos, has_gauss, cached = cast(tuple[str, np.ndarray, int, int, float], np.random.get_state())
        checkpoint["rng_states"] = {"torch": torch.get_rng_state(), "python": random.getstate(),
                                    # plain types: Lightning resumes with torch.load(weights_only=True)
                                    "numpy": [name, keys.tolist(), int(pos), int(has_gauss), float(cached)]}

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        """Resuming (``ckpt_path=``) onto a model built with other vocabularies would load embedding rows
        onto the wrong words: refuse it. A checkpoint saved during an epoch's end resumes at the next epoch's start
        (``checkpoints.epoch_end``)."""
        trainer = self._trainer  # None outside a fit (Lightning's load_from_checkpoint)
        self._cut_epoch_end = as_after_epoch_end(checkpoint, counted_in_steps=trainer is not None and
                                                 trainer.max_steps != -1)
        means = checkpoint.get("running_means")
        if means:
            self._window.load_state_dict(means["window"], self.device)
            self._epoch.load_state_dict(means["epoch"], self.device)
        rng = checkpoint.get("rng_states")
        if rng:
            torch.set_rng_state(rng["torch"])
            name, keys, pos, has_gauss, cached = rng["numpy"]
            np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
            random.setstate(rng["python"])
        for side, saved in saved_vocabs(checkpoint).items():
            ours = self.vocabs.get(side)
            if ours is None:
                raise ValueError(f"the checkpoint has a {side} vocabulary this run does not build: resume with the "
                                 "objective and data the checkpoint was trained with")
            if list(saved) != list(ours.itos):
                differ = next((i for i, (a, b) in enumerate(zip(saved, ours.itos)) if a != b),
                              min(len(saved), len(ours)))
                raise ValueError(
                    f"the checkpoint's {side} vocabulary ({len(saved)} words) is not this run's ({len(ours)} words; "
                    f"first difference at id {differ}): resume with the data settings the checkpoint was trained "
                    "with (data.*, e.g. vocab_size, vocab_source, tokenizer) or start a new run without ckpt_path")

