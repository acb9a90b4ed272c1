"""``layer_vectors``: every layer of an encoder, bottom first, the last one ``forward``'s vector exactly; each layer
checked against an independent computation (PyTorch's own RNN cut to that depth, run on each sentence alone)."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from sentence_lab.encoders.base import NoLayers, layers_of
from sentence_lab.encoders.bilstm import BiLSTMLastEncoder, BiLSTMMaxEncoder
from sentence_lab.encoders.bow import BagOfWordsEncoder
from sentence_lab.encoders.gated_conv import GatedConvEncoder
from sentence_lab.encoders.gru import GRUEncoder
from sentence_lab.encoders.multichannel import MultiChannelEncoder
from sentence_lab.encoders.rnn import run_rnn, run_rnn_layers
from sentence_lab.text.padding import pad_batch

SENTENCES = [[4, 5, 6, 7], [8], [9, 10, 4, 5, 6, 7, 8], [11, 12], [4, 4, 4]]


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    return pad_batch(SENTENCES)


def truncated(rnn: nn.LSTM | nn.GRU, depth: int) -> nn.LSTM | nn.GRU:
    """A fresh ``depth``-layer RNN holding the first ``depth`` layers' weights of ``rnn``."""
    cut = type(rnn)(rnn.input_size, rnn.hidden_size, num_layers=depth, bidirectional=rnn.bidirectional,
                    batch_first=True)
    cut.load_state_dict({k: v for k, v in rnn.state_dict().items() if int(k.split("_l")[1][0]) < depth})
    return cut.eval()


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU])
@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("path", ["packed", "buckets", "whole"])
def test_run_rnn_layers_ends_with_run_rnns_states_bit_for_bit(cell, bidirectional, path):
    torch.manual_seed(0)
    rnn = cell(6, 5, num_layers=3, bidirectional=bidirectional, batch_first=True).eval()
    lengths = torch.tensor([4, 7, 1, 5, 2, 7, 3])
    x = torch.randn(7, 7, 6)
    options = {"packed": {"packed": True}, "buckets": {"bucket_rows": 2}, "whole": {"bucket_rows": None}}[path]
    states, final = run_rnn(rnn, x, lengths, **options)
    layers = run_rnn_layers(rnn, x, lengths, **options)
    real = (torch.arange(7)[None, :] < lengths[:, None])[:, :, None]
    assert len(layers) == 3
    assert torch.equal(layers[-1][1], final) and torch.equal(layers[-1][0] * real, states * real)


@pytest.mark.parametrize("cls", [BiLSTMMaxEncoder, BiLSTMLastEncoder])
def test_bilstm_layer_k_is_torchs_k_layer_lstm_on_each_sentence_alone(vocab, cls):
    enc = cls(vocab, embed_dim=6, hidden_dim=5, num_layers=3).eval()
    tokens, lengths = batch()
    with torch.no_grad():
        layers = enc.layer_vectors(tokens, lengths)
        assert len(layers) == 4 and torch.equal(layers[-1], enc(tokens, lengths))
        for i, ids in enumerate(SENTENCES):
            words = enc.embedding(torch.tensor([ids]))[0]
            baseline = words.max(0).values if cls is BiLSTMMaxEncoder else words.mean(0)
            torch.testing.assert_close(layers[0][i], baseline, atol=1e-6, rtol=0)
            for depth in (1, 2, 3):
                states, (h, _) = truncated(enc.lstm, depth)(words[None])
                expected = states[0].max(0).values if cls is BiLSTMMaxEncoder else torch.cat([h[-2, 0], h[-1, 0]])
                torch.testing.assert_close(layers[depth][i], expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("bidirectional", [True, False])
def test_gru_layer_k_is_the_last_state_of_torchs_k_layer_gru(vocab, bidirectional):
    enc = GRUEncoder(vocab, embed_dim=6, hidden_dim=5, num_layers=2, bidirectional=bidirectional).eval()
    tokens, lengths = batch()
    with torch.no_grad():
        layers = enc.layer_vectors(tokens, lengths)
        assert len(layers) == 3 and torch.equal(layers[-1], enc(tokens, lengths))
        for i, ids in enumerate(SENTENCES):
            words = enc.embedding(torch.tensor([ids]))[0]
            torch.testing.assert_close(layers[0][i], words.mean(0), atol=1e-6, rtol=0)
            for depth in (1, 2):
                _, h = truncated(enc.gru, depth)(words[None])
                expected = torch.cat([h[-2, 0], h[-1, 0]]) if bidirectional else h[-1, 0]
                torch.testing.assert_close(layers[depth][i], expected, atol=1e-5, rtol=0)


def test_gated_conv_layers_are_each_blocks_max_over_real_positions(vocab):
    enc = GatedConvEncoder(vocab, embed_dim=6, channels=6, num_layers=3, kernel_size=3).eval()
    tokens, lengths = batch()
    with torch.no_grad():
        layers = enc.layer_vectors(tokens, lengths)
        assert len(layers) == 4 and torch.equal(layers[-1], enc(tokens, lengths))
        for i, ids in enumerate(SENTENCES):  # each sentence alone: no padding at all
            n = len(ids)
            x = (enc.embedding(torch.tensor([ids])) + enc.positions(torch.arange(n))[None]).transpose(1, 2)
            mask = torch.ones(1, 1, n, dtype=torch.bool)
            torch.testing.assert_close(layers[0][i], x[0].max(1).values, atol=1e-6, rtol=0)
            for depth, block in enumerate(enc.layers, start=1):
                x = block(x, mask)
                torch.testing.assert_close(layers[depth][i], x[0].max(1).values, atol=1e-5, rtol=0)


def test_a_bag_of_words_has_one_layer_its_vector(vocab):
    enc = BagOfWordsEncoder(vocab, embed_dim=6, pooling="sum")
    tokens, lengths = batch()
    layers = enc.layer_vectors(tokens, lengths)
    assert len(layers) == 1 and torch.equal(layers[0], enc(tokens, lengths))


def test_multichannel_layers_join_the_channels_and_refuse_uneven_depths(vocab):
    lstm = {"_target_": "sentence_lab.encoders.bilstm.BiLSTMMaxEncoder", "embed_dim": 4, "hidden_dim": 3,
            "num_layers": 2}
    enc = MultiChannelEncoder(vocab, {"a": lstm, "b": {**lstm, "hidden_dim": 2}}).eval()
    tokens, lengths = batch()
    with torch.no_grad():
        layers = enc.layer_vectors(tokens, lengths)
        assert [v.size(1) for v in layers] == [8, 10, 10] and torch.equal(layers[-1], enc(tokens, lengths))
        a = enc.channels["a"].layer_vectors(tokens, lengths)
        assert torch.equal(layers[1][:, :6], a[1])
    uneven = MultiChannelEncoder(vocab, {"a": lstm, "b": {**lstm, "num_layers": 1}})
    with pytest.raises(NoLayers, match="different depths"):
        uneven.layer_vectors(tokens, lengths)


def test_an_encoder_without_layers_is_named_in_one_line():
    class Flat(nn.Module):
        pass

    with pytest.raises(NoLayers, match="Flat does not expose its layers"):
        layers_of(Flat(), *batch())
