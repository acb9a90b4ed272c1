"""Toy encoders for objective tests: sentence vectors chosen by hand."""
from __future__ import annotations

import torch

from sentence_lab.encoders.bow import BagOfWordsEncoder
from sentence_lab.text import SPECIALS, Vocab

TOY_VOCAB = Vocab(list(SPECIALS) + [f"w{i}" for i in range(12)])


def sum_encoder(rows: dict[int, list[float]], vocab: Vocab = TOY_VOCAB) -> BagOfWordsEncoder:
    """A trainable additive encoder whose word ``id`` has vector ``rows[id]`` (others zero)."""
    dim = len(next(iter(rows.values())))
    enc = BagOfWordsEncoder(vocab, embed_dim=dim, pooling="sum")
    with torch.no_grad():
        enc.embedding.weight.zero_()
        for i, vec in rows.items():
            enc.embedding.weight[i] = torch.tensor(vec)
    return enc


def one_word_batch(a: list[int], b: list[int]) -> dict[str, torch.Tensor]:
    """Pairs of one-word segments: ``a[i]`` aligned with ``b[i]``."""
    ones = torch.ones(len(a), dtype=torch.long)
    return {"a_tokens": torch.tensor(a)[:, None], "a_lengths": ones, "b_tokens": torch.tensor(b)[:, None],
            "b_lengths": ones.clone()}
