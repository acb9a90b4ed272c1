"""Gated convolutional encoder."""
from __future__ import annotations

from typing import Any

import pytest
import torch

from sentence_lab.encoders.gated_conv import GatedConvEncoder
from sentence_lab.text.padding import pad_batch


def _encoder(vocab, **kwargs) -> GatedConvEncoder:
    sizes: dict[str, Any] = dict(embed_dim=8, channels=6, num_layers=3, kernel_size=3, max_positions=10)
    sizes.update(kwargs)
    return GatedConvEncoder(vocab, **sizes).eval()


def test_sentences_longer_than_max_positions_are_an_error(vocab) -> None:
    enc = _encoder(vocab)
    tokens, lengths = pad_batch([[4] * 11])
    with pytest.raises(ValueError, match="max_positions=10"):
        enc(tokens, lengths)


def test_wide_padding_is_fine_when_sentences_fit(vocab) -> None:
    enc = _encoder(vocab)
    tokens = torch.zeros(2, 15, dtype=torch.long)
    tokens[0, :10] = 4
    tokens[1, :3] = 5
    out = enc(tokens, torch.tensor([10, 3]))
    assert out.shape == (2, 6)


@pytest.mark.parametrize("kernel_size", [3, 4, 5])
def test_tokens_in_padding_region_do_not_change_output(vocab, kernel_size) -> None:
    enc = _encoder(vocab, kernel_size=kernel_size)
    tokens, lengths = pad_batch([[4, 5, 6], [7, 8, 9, 10, 11, 12, 13]])
    noisy = tokens.clone()
    noisy[0, 3:] = torch.tensor([14, 9, 8, 4])  # garbage after sentence 0's end
    with torch.no_grad():
        torch.testing.assert_close(enc(noisy, lengths), enc(tokens, lengths), atol=1e-6, rtol=0)
        # a single-sentence batch agrees too
        torch.testing.assert_close(enc(*pad_batch([[4, 5, 6]]))[0], enc(tokens, lengths)[0], atol=1e-5, rtol=0)


def test_residual_only_where_shapes_match(vocab) -> None:
    enc = _encoder(vocab, embed_dim=8, channels=6)
    assert [layer.residual for layer in enc.layers] == [False, True, True]
    same = _encoder(vocab, embed_dim=6, channels=6)
    assert all(layer.residual for layer in same.layers)
    assert same.output_dim == 6


def test_positions_matter(vocab) -> None:
    enc = _encoder(vocab, num_layers=1, kernel_size=1)
    with torch.no_grad():
        a = enc(*pad_batch([[4, 5]]))
        b = enc(*pad_batch([[5, 4]]))
    assert not torch.allclose(a, b)
