"""Id lists -> one padded tensor (the only part of the text layer that needs torch)."""
from __future__ import annotations

from collections.abc import Sequence

import torch

from sentence_lab.text.vocab import PAD_ID, UNK_ID


def pad_batch(sequences: Sequence[Sequence[int]], max_len: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad id lists with ``PAD_ID``; returns tokens ``[B, T]`` and lengths ``[B]``.

    Empty sequences get length 1 (one ``<unk>``) so every encoder sees at least one token.
    """
    seqs = [list(s[:max_len]) if max_len else list(s) for s in sequences]
    seqs = [s if s else [UNK_ID] for s in seqs]
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    tokens = torch.full((len(seqs), int(lengths.max()) if seqs else 0), PAD_ID, dtype=torch.long)
    for i, s in enumerate(seqs):
        tokens[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return tokens, lengths
