"""The decoding objectives' noise: SDAE deletion and bigram swaps (Hill et al. 2016), decoder word dropout."""
from __future__ import annotations

import torch

from sentence_lab.objectives.noise import sdae_noise, word_dropout
from sentence_lab.text import BOS_ID, PAD_ID, UNK_ID


def padded(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    out = torch.full((len(rows), max(map(len, rows))), PAD_ID)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r)
    return out, torch.tensor([len(r) for r in rows])


def rows_of(tokens: torch.Tensor, lengths: torch.Tensor) -> list[list[int]]:
    return [t[:n].tolist() for t, n in zip(tokens, lengths.tolist())]


def test_no_noise_is_the_identity():
    tokens, lengths = padded([[10, 11, 12], [13, 14]])
    assert rows_of(*sdae_noise(tokens, lengths, 0.0, 0.0)) == [[10, 11, 12], [13, 14]]


def test_swap_one_swaps_every_non_overlapping_bigram():
    tokens, lengths = padded([[10, 11, 12, 13, 14], [20, 21]])
    assert rows_of(*sdae_noise(tokens, lengths, 0.0, 1.0)) == [[11, 10, 13, 12, 14], [21, 20]]


def test_deletion_keeps_order_at_least_one_word_and_its_rate():
    torch.manual_seed(0)
    words = list(range(10, 60))
    tokens, lengths = padded([words] * 200)
    noisy = rows_of(*sdae_noise(tokens, lengths, 0.3, 0.0))
    kept = sum(map(len, noisy)) / (200 * len(words))
    assert abs(kept - 0.7) < 0.02
    assert all(row == sorted(row) and set(row) <= set(words) for row in noisy)
    short, short_len = padded([[7]] * 50)
    assert rows_of(*sdae_noise(short, short_len, 0.9, 0.0)) == [[7]] * 50


def test_word_dropout_spares_sentence_starts_and_padding():
    torch.manual_seed(0)
    inputs = torch.tensor([[BOS_ID] + list(range(10, 30)) + [PAD_ID] * 5] * 100)
    dropped = word_dropout(inputs, 0.25)
    assert torch.equal(dropped[:, 0], inputs[:, 0]) and torch.equal(dropped[:, 21:], inputs[:, 21:])
    changed = dropped[:, 1:21] != inputs[:, 1:21]
    assert bool((dropped[:, 1:21][changed] == UNK_ID).all())
    assert abs(changed.float().mean().item() - 0.25) < 0.02
    assert torch.equal(word_dropout(inputs, 0.0), inputs)
