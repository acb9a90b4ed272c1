"""Trained and untrained sentence models as text encoders."""
from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

import torch
from omegaconf import DictConfig, OmegaConf

from sentence_lab.checkpoints.choice import resolve_checkpoint
from sentence_lab.evaluation.encoders.text_encoders import Concatenation
from sentence_lab.text import Tokenizer, Vocab
from sentence_lab.training.inference import TrainedModel
from sentence_lab.training.untrained import untrained_model


def load_model(path: str | Path, vocab_expansion: bool = False,
               device: str | torch.device | None = None) -> TrainedModel:
    """A trained model ready to encode sentences (``model.encode(["A sentence.", ...])``: float32 ``[n, d]``), from a
    run directory (its best checkpoint) or a ``.ckpt`` file that ``train.py`` wrote, read as data (docs/trust.md).
    ``vocab_expansion``: words outside the training vocabulary get vectors mapped from GloVe (Kiros et al. 2015).
    ``device``: where the weights go (a GPU when there is one, by default). Exported as ``sentence_lab.load_model``."""
    return _load_resolved(resolve_checkpoint(str(path)), vocab_expansion, device)


def _load_resolved(path: Path, vocab_expansion: bool, device: str | torch.device | None) -> TrainedModel:
    """``load_model`` on a checkpoint file ``resolve_checkpoint`` has already chosen and checked."""
    model = TrainedModel.load_checkpoint(str(path), map_location=device).eval()
    if vocab_expansion:
        skipped = model.expand_vocabulary().get("skipped")
        if skipped:  # e.g. a toy vocabulary: encodes without expansion, recorded in describe()
            print(f"warning: vocabulary expansion skipped: {skipped}", file=sys.stderr)
    return model


def load_checkpoint_encoder(ckpt_path: str, vocab_expansion: bool) -> tuple[TrainedModel, dict]:
    """(model, description) of a checkpoint or run directory (its best.ckpt), on the CPU."""
    path = resolve_checkpoint(str(ckpt_path))
    model = _load_resolved(path, vocab_expansion, device="cpu")
    return model, {"name": f"checkpoint:{path.parent.parent.name}/{path.stem}", **model.describe(),
                   "source": f"checkpoint {path}"}


def load_concatenation(ckpt_paths: Iterable[str], vocab_expansion: bool) -> tuple[Concatenation, dict]:
    """Several checkpoints side by side (combine-QT, MC-QT as published): their vectors concatenated."""
    loaded = [load_checkpoint_encoder(p, vocab_expansion) for p in ckpt_paths]
    combined = Concatenation([m for m, _ in loaded], [d for _, d in loaded])
    return combined, {**combined.describe(), "source": "concatenated checkpoints"}


def untrained_encoder(encoder_cfg: DictConfig, tokenizer_cfg: DictConfig, sentences: list[str],
                      seed: int) -> tuple[TrainedModel, dict]:
    """A trainable encoder config at its seeded random initialisation, with a vocabulary built from
    ``sentences`` (the requested tasks' text)."""
    tokenizer = Tokenizer(**cast(dict[str, Any], OmegaConf.to_container(tokenizer_cfg)))
    vocab = Vocab.from_sentences(tokenizer(s) for s in sentences)
    model = untrained_model(encoder_cfg, vocab, tokenizer, seed=int(seed)).eval()
    target = str(encoder_cfg.get("_target_"))
    return model, {"name": f"{target.rsplit('.', 1)[-1]}-untrained", **model.describe(), "source": "untrained",
                   "untrained": f"random init (seed {seed}); vocabulary of {len(vocab)} words built from the "
                                f"{len(sentences)} distinct sentences of the requested tasks, tokenizer "
                                f"{tokenizer.to_dict()}",
                   "encoder_config": OmegaConf.to_container(encoder_cfg, resolve=True)}
