"""Noise on token batches, for the decoding objectives' levers (docs/objectives.md)."""
from __future__ import annotations

import torch

from sentence_lab.text import BOS_ID, PAD_ID, UNK_ID


def sdae_noise(tokens: torch.Tensor, lengths: torch.Tensor, delete_p: float, swap_p: float,
               generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Hill et al. 2016's sequential denoising autoencoder noise on ``[B, T]`` padded ids: each word is deleted
    with probability ``delete_p`` (a sentence keeps at least one word), then each non-overlapping bigram
    ``(w_i, w_i+1)``, i = 0, 2, 4, ..., is swapped with probability ``swap_p``. Returns new ids and lengths."""
    rows = []
    for row, n in zip(tokens.cpu(), lengths.cpu().tolist()):
        words = row[:n]
        keep = torch.rand(n, generator=generator) >= delete_p
        if not bool(keep.any()):
            keep[torch.randint(n, (1,), generator=generator)] = True
        words = words[keep].clone()
        for i in range(0, len(words) - 1, 2):
            if float(torch.rand(1, generator=generator)) < swap_p:
                words[i], words[i + 1] = words[i + 1].clone(), words[i].clone()
        rows.append(words)
    new_lengths = torch.tensor([len(r) for r in rows], dtype=lengths.dtype)
    out = torch.full((len(rows), int(new_lengths.max())), PAD_ID, dtype=tokens.dtype)
    for i, words in enumerate(rows):
        out[i, : len(words)] = words
    return out.to(tokens.device), new_lengths.to(lengths.device)


def word_dropout(inputs: torch.Tensor, p: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """A decoder's teacher-forcing inputs with each real word (not ``<s>``, not padding) replaced by ``<unk>`` with
    probability ``p`` (Bowman et al. 2016): the decoder must take what it cannot read from the sentence vector."""
    if p <= 0:
        return inputs
    drop = torch.rand(inputs.shape, generator=generator).to(inputs.device) < p
    drop &= (inputs != PAD_ID) & (inputs != BOS_ID)
    return inputs.masked_fill(drop, UNK_ID)
