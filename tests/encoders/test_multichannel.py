"""MultiChannelEncoder: channels side by side, each with its own embedding table."""
from __future__ import annotations

import pytest
import torch

from sentence_lab.encoders.multichannel import MultiChannelEncoder
from sentence_lab.text.padding import pad_batch
from tests.encoders.conftest import compose_encoder


def test_mc_config_concatenates_a_frozen_glove_channel_and_a_tuned_one(vocab):
    cfg = compose_encoder("mc_bilstm_max", ["channels.fixed.hidden_dim=4", "channels.tuned.hidden_dim=3",
                                            "channels.tuned.embed_dim=5"])
    enc = MultiChannelEncoder(vocab=vocab, channels=cfg.channels)
    assert enc.output_dim == 2 * 4 + 2 * 3
    assert not enc.channels["fixed"].embedding.weight.requires_grad
    assert enc.channels["tuned"].embedding.weight.requires_grad
    tokens, lengths = pad_batch([[4, 5, 6], [7]])
    out = enc(tokens, lengths)
    expected = torch.cat([enc.channels["fixed"](tokens, lengths), enc.channels["tuned"](tokens, lengths)], dim=1)
    torch.testing.assert_close(out, expected)


def test_a_channel_without_target_is_a_clear_error(vocab):
    with pytest.raises(ValueError, match="_target_"):
        MultiChannelEncoder(vocab=vocab, channels={"a": {"embed_dim": 4}})
