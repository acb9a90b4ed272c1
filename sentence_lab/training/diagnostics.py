"""What training does to the sentence vectors, measured while it trains (issue: every objective pays off).

``VectorDiagnostics`` encodes a fixed set of validation sentences at chosen steps (0, 25, 50, 100, 200, ...) and
writes one JSON line per measurement to ``<run dir>/diagnostics.jsonl``:

- ``anisotropy``: the mean cosine between random pairs of sentence vectors (0 for isotropic vectors, 1 when all
  point one way);
- ``pc1_share``: the share of the vectors' variance along their first principal component;
- ``effective_rank``: exp of the entropy of the normalised singular values of the centred vectors (Roy & Vetterli
  2007): how many directions the vectors really use, out of ``dim``;
- ``dim_variance``: the per-dimension variance's mean, median, and the share of dimensions with less than 1% of
  the mean (dead dimensions);
- ``norm``: the mean norm of a sentence vector;
- ``maxpool_winners``: for a max-pooling encoder, the share of a sentence's positions that win at least one
  dimension (1: every word contributes; 1/length: one word decides every dimension);
- ``decoder_loss`` and ``decoder_loss_mean_vector``: the objective's loss on the fixed batches, and the same with
  every sentence vector replaced by the batch's mean vector. Their gap is how much the decoder uses the vector at
  all (0: it ignores the sentence and predicts from its own language model);
- ``decoder_loss_other_batch`` and ``document_use``: the loss with every sentence vector replaced by the mean
  vector of another fixed batch (from elsewhere in the validation data), and its gap to the loss with the batch's
  own mean. A batch is consecutive sentences of one document, so its mean carries the document (its topic, its
  characters): ``vector_use`` is what the decoder takes from the sentence itself, ``document_use`` what it takes
  from where the sentence is. Skip-thought's decoders, which generate a neighbour, use mostly the latter.

- ``word_norm_<band>``: for an encoder with a word table, the mean norm of its word vectors by frequency band of
  the vocabulary (ids are in order of frequency: the 50 most frequent words, the next 450, the next 4,500, the rest).
  An additive encoder's average is dominated by whichever band grows: J_bi under Adam with an L2 term over the whole
  table shrinks every word a batch does not hold at the optimiser's full step (Adam normalises the tiny gradient).

The fixed batches are spread evenly over the validation data (the first, the last and between), so that they come
from different documents.
"""
from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from lightning.pytorch.callbacks import Callback

from sentence_lab.encoders.base import length_mask
from sentence_lab.encoders.bilstm import BiLSTMMaxEncoder
from sentence_lab.encoders.embedding import trim_to_longest
from sentence_lab.objectives.contract import source_side
from sentence_lab.training.trainer_state import datamodule_of

log = logging.getLogger(__name__)

DEFAULT_STEPS = (0, 25, 50, 100, 200, 300, 400, 600, 800, 1000, 1500, 2000, 3000, 4000, 6000, 8000)


def vector_statistics(vectors: np.ndarray, pairs: int = 5000, seed: int = 0) -> dict[str, float]:
    """Anisotropy, first-component share, effective rank, per-dimension variance and norm of ``[n, d]`` vectors."""
    x = np.asarray(vectors, dtype=np.float64)
    n, dim = x.shape
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, n, size=(2, pairs))
    keep = a != b
    unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    cosines = np.einsum("ij,ij->i", unit[a[keep]], unit[b[keep]])
    centred = x - x.mean(0)
    singular = np.linalg.svd(centred, compute_uv=False)
    power = singular ** 2
    total = power.sum()
    p = singular / singular.sum() if singular.sum() > 0 else np.ones_like(singular) / len(singular)
    p = p[p > 0]
    variance = x.var(0)
    return {
        "anisotropy": float(cosines.mean()),
        "pc1_share": float(power[0] / total) if total > 0 else 1.0,
        "effective_rank": float(math.exp(-(p * np.log(p)).sum())) if total > 0 else 0.0,
        "dim": int(dim),
        "dim_variance_mean": float(variance.mean()),
        "dim_variance_median": float(np.median(variance)),
        "dead_dim_share": float((variance < 0.01 * variance.mean()).mean()) if variance.mean() > 0 else 1.0,
        "norm": float(np.linalg.norm(x, axis=1).mean()),
    }


def maxpool_winner_share(states: torch.Tensor, lengths: torch.Tensor) -> float:
    """Mean over sentences of (positions that win at least one dimension of the max-pool) / length."""
    mask = length_mask(lengths, states.shape[1]).unsqueeze(-1)
    winners = states.masked_fill(~mask, float("-inf")).argmax(dim=1)  # [B, D]: the winning position per dimension
    shares = [len(torch.unique(row)) / int(n) for row, n in zip(winners, lengths)]
    return float(np.mean(shares))


FREQUENCY_BANDS = {"top50": (4, 54), "top500": (54, 504), "top5000": (504, 5004), "rest": (5004, None)}


def word_norms_by_frequency(table: torch.Tensor) -> dict[str, float]:
    """Mean norm of a frequency-ordered word table's rows per band (``FREQUENCY_BANDS``; the 4 specials left out),
    as ``word_norm_<band>``; bands the vocabulary does not reach are left out."""
    norms = table.detach().float().norm(dim=1).cpu()
    out = {}
    for band, (start, end) in FREQUENCY_BANDS.items():
        rows = norms[start:end]
        if rows.numel():
            out[f"word_norm_{band}"] = float(rows.mean())
    return out


class _MeanVector:
    """A forward hook that replaces an encoder's output by its batch mean, broadcast to every row."""

    def __call__(self, module, inputs, output: torch.Tensor) -> torch.Tensor:
        return output.mean(0, keepdim=True).expand_as(output)


class _FixedVector:
    """A forward hook that replaces an encoder's output by one given vector, broadcast to every row."""

    def __init__(self, vector: torch.Tensor) -> None:
        self.vector = vector

    def __call__(self, module, inputs, output: torch.Tensor) -> torch.Tensor:
        return self.vector.to(output.device, output.dtype).unsqueeze(0).expand_as(output)


def spread_indices(total: int, n: int) -> list[int]:
    """``n`` batch indices spread evenly over ``0 .. total - 1`` (all of them when ``total <= n``)."""
    if total <= n:
        return list(range(total))
    return sorted({int(round(i * (total - 1) / (n - 1))) for i in range(n)}) if n > 1 else [0]


def _word_table(encoder) -> torch.Tensor | None:
    """The encoder's word table (``WordEmbedding``'s ``nn.Embedding``), if it has one."""
    embedding = getattr(getattr(encoder, "embedding", None), "embedding", None)
    return embedding.weight if isinstance(embedding, torch.nn.Embedding) else None


def _loss_with_hook(objective, encoder, batch: dict[str, torch.Tensor], hook) -> float:
    """The objective's loss on ``batch`` with the encoder's output rewritten by ``hook``."""
    handle = encoder.register_forward_hook(hook)
    try:
        return float(objective(batch)["loss"])
    finally:
        handle.remove()


class VectorDiagnostics(Callback):
    """Measure the sentence vectors (and how much a decoder uses them) at ``steps``; see the module docstring.

    Args:
        steps: the global steps at which to measure (step 0: before any update).
        n_batches: how many validation batches make the fixed set (their sentences and, for the decoder test,
            the batches themselves).
        output: the JSON-lines file; default ``<trainer.default_root_dir>/diagnostics.jsonl``.
    """

    def __init__(self, steps: Iterable[int] = DEFAULT_STEPS, n_batches: int = 4, output: str | None = None) -> None:
        self.steps = sorted({int(s) for s in steps})
        self.n_batches = int(n_batches)
        self.output = Path(output) if output else None
        self._batches: list[dict[str, torch.Tensor]] | None = None
        self._done: set[int] = set()

    def _fixed_batches(self, trainer) -> list[dict[str, torch.Tensor]]:
        if self._batches is None:
            loader = datamodule_of(trainer).val_dataloader()
            wanted = spread_indices(len(loader), self.n_batches)
            self._batches = []
            for index, batch in enumerate(loader):
                if index in wanted:
                    self._batches.append(batch)
                if index >= wanted[-1]:
                    break
        return self._batches

    def on_train_batch_start(self, trainer, pl_module, batch: Any, batch_idx: int) -> None:
        step = int(trainer.global_step)
        if step in self.steps and step not in self._done and trainer.is_global_zero:
            self._done.add(step)
            self._measure_or_warn(trainer, pl_module, step)

    def on_train_end(self, trainer, pl_module) -> None:
        step = int(trainer.global_step)
        if step not in self._done and trainer.is_global_zero:
            self._measure_or_warn(trainer, pl_module, step)

    def _measure_or_warn(self, trainer, pl_module, step: int) -> None:
        """A measurement that fails is a warning and a line in the file, never the end of the run."""
        try:
            self.measure(trainer, pl_module, step)
        except Exception as err:  # noqa: BLE001 - a diagnostic must not stop training
            log.warning("diagnostics at step %d failed: %s: %s", step, type(err).__name__, err)
            self._write(trainer, {"step": step, "error": f"{type(err).__name__}: {err}"})

    def _write(self, trainer, record: dict[str, Any]) -> None:
        path = self.output or Path(trainer.default_root_dir) / "diagnostics.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")

    @torch.no_grad()
    def measure(self, trainer, pl_module, step: int) -> dict[str, Any]:
        """Measure now; append the record to the JSON-lines file and return it."""
        was_training = pl_module.training
        pl_module.eval()
        objective = pl_module.objective
        encoder = getattr(objective, "f", None)
        vectors, shares, losses, mean_losses, other_losses = [], [], [], [], []
        try:
            batches = [{k: v.to(pl_module.device) if torch.is_tensor(v) else v for k, v in batch.items()}
                       for batch in self._fixed_batches(trainer)]
            for batch in batches:
                tokens, lengths = source_side(batch)
                vectors.append(pl_module.objective.embed(tokens, lengths).float().cpu().numpy())
                if isinstance(encoder, BiLSTMMaxEncoder):
                    states, _ = encoder._run(trim_to_longest(tokens, lengths), lengths)
                    shares.append(maxpool_winner_share(states, lengths))
            if encoder is not None:
                for index, batch in enumerate(batches):
                    losses.append(float(objective(batch)["loss"]))
                    mean_losses.append(_loss_with_hook(objective, encoder, batch, _MeanVector()))
                    if len(batches) > 1:  # the next batch's mean: another place in the validation data
                        other = torch.from_numpy(vectors[(index + 1) % len(batches)].mean(0))
                        other_losses.append(_loss_with_hook(objective, encoder, batch, _FixedVector(other)))
        finally:
            pl_module.train(was_training)
        record: dict[str, Any] = {"step": step, **vector_statistics(np.concatenate(vectors))}
        table = _word_table(encoder)
        if table is not None:
            record.update(word_norms_by_frequency(table))
        if shares:
            record["maxpool_winners"] = float(np.mean(shares))
        if losses:
            record["decoder_loss"] = float(np.mean(losses))
            record["decoder_loss_mean_vector"] = float(np.mean(mean_losses))
            record["vector_use"] = record["decoder_loss_mean_vector"] - record["decoder_loss"]
        if other_losses:
            record["decoder_loss_other_batch"] = float(np.mean(other_losses))
            record["document_use"] = record["decoder_loss_other_batch"] - record["decoder_loss_mean_vector"]
        self._write(trainer, record)
        return record
