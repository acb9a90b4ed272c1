"""An encoder as initialised, no training and no objective: the untrained baselines and every model's epoch 0."""
from __future__ import annotations

from typing import Any

import torch

from sentence_lab.encoders.embedding import WordEmbedding
from sentence_lab.text import SPECIALS, Tokenizer, Vocab
from sentence_lab.training.inference import TrainedModel


def untrained_model(encoder_cfg: Any, vocab: Vocab, tokenizer: Tokenizer, seed: int = 1111) -> TrainedModel:
    """An encoder with its random initialisation (seeded) and no objective.

    The network depends on the config and ``seed`` only, not on which other words ``vocab`` holds: ``vocab`` is
    built from the requested tasks' sentences, and each task list would otherwise draw another network. The
    layers past the embedding tables are drawn over the specials-only vocabulary and copied in (built over
    ``vocab``, a table draws its rows first, as many as it has words); each word's random row is drawn from the
    seed and the word alone (``WordEmbedding.redraw_random_rows``; GloVe rows stay GloVe's)."""
    torch.manual_seed(seed)
    model = TrainedModel(encoder=encoder_cfg, objective=None, vocabs={"source": vocab},
                          tokenizers={"source": tokenizer.to_dict()})
    torch.manual_seed(seed)
    layers = TrainedModel(encoder=encoder_cfg, objective=None, vocabs={"source": Vocab(list(SPECIALS))},
                           tokenizers={"source": tokenizer.to_dict()})
    embeddings = {name: module for name, module in model.named_modules() if isinstance(module, WordEmbedding)}
    tables = {f"{name}.{param}" for name, module in embeddings.items() for param, _ in module.named_parameters()}
    model.load_state_dict({k: v for k, v in layers.state_dict().items() if k not in tables}, strict=False)
    for name, module in embeddings.items():
        module.redraw_random_rows(list(model.vocab.itos), seed, key=name)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return model.to(device).eval()
