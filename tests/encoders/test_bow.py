"""Bag-of-words encoder."""
from __future__ import annotations

import pytest
import torch

from sentence_lab.encoders.bow import BagOfWordsEncoder
from sentence_lab.text.padding import pad_batch


def test_mean_and_sum_of_word_vectors(vocab) -> None:
    sentences = [[4, 5, 6], [7]]
    tokens, lengths = pad_batch(sentences)
    mean_enc = BagOfWordsEncoder(vocab, embed_dim=6)
    sum_enc = BagOfWordsEncoder(vocab, embed_dim=6, pooling="sum")
    sum_enc.load_state_dict(mean_enc.state_dict())
    w = mean_enc.embedding.weight.detach()
    assert mean_enc.output_dim == 6
    torch.testing.assert_close(mean_enc(tokens, lengths)[0], w[[4, 5, 6]].mean(0))
    torch.testing.assert_close(mean_enc(tokens, lengths)[1], w[7])
    torch.testing.assert_close(sum_enc(tokens, lengths)[0], w[[4, 5, 6]].sum(0))


def test_tokens_in_padding_are_ignored(vocab) -> None:
    enc = BagOfWordsEncoder(vocab, embed_dim=6)
    tokens = torch.tensor([[4, 5, 0, 0], [6, 7, 8, 9]])
    lengths = torch.tensor([2, 4])
    noisy = torch.tensor([[4, 5, 9, 10], [6, 7, 8, 9]])
    torch.testing.assert_close(enc(tokens, lengths), enc(noisy, lengths))


def test_unknown_pooling_is_rejected(vocab) -> None:
    with pytest.raises(ValueError, match="mean"):
        BagOfWordsEncoder(vocab, embed_dim=6, pooling="max")
