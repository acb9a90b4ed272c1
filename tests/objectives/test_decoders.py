"""The shared GRU decoder: teacher-forcing sequences, a loss by hand, padding, greedy decoding."""
from __future__ import annotations

import math

import pytest
import torch

from sentence_lab.objectives.decoders import GRUDecoder, clip_vocabulary, decoder_io, token_mean
from sentence_lab.text import BOS_ID, EOS_ID, PAD_ID, UNK_ID

V = 10


def fixed_distribution_decoder(probs: torch.Tensor, condition: str = "both") -> GRUDecoder:
    """A decoder whose next-word distribution is ``probs`` whatever it reads (output weights zero)."""
    dec = GRUDecoder(V, condition_dim=4, embed_dim=3, hidden_dim=5, condition=condition)
    with torch.no_grad():
        dec.output.weight.zero_()
        dec.output.bias.copy_(probs.log())
    return dec


def test_decoder_io_shifts_and_appends_eos():
    tokens = torch.tensor([[5, 6, 7], [8, 0, 0]])
    inputs, targets, lengths = decoder_io(tokens, torch.tensor([3, 1]))
    assert inputs.tolist() == [[BOS_ID, 5, 6, 7], [BOS_ID, 8, PAD_ID, PAD_ID]]
    assert targets.tolist() == [[5, 6, 7, EOS_ID], [8, EOS_ID, PAD_ID, PAD_ID]]
    assert lengths.tolist() == [4, 2]


def test_clip_vocabulary_maps_rare_ids_to_unk():
    assert clip_vocabulary(torch.tensor([[4, 9, 10, 30]]), 10).tolist() == [[4, 9, UNK_ID, UNK_ID]]


@pytest.mark.parametrize("condition", ["init", "input", "both"])
def test_teacher_forcing_shapes(condition):
    dec = GRUDecoder(V, condition_dim=4, embed_dim=3, hidden_dim=5, condition=condition)
    states = dec.hidden_states(torch.randn(2, 4), torch.tensor([[BOS_ID, 5, 6], [BOS_ID, 7, 0]]))
    assert states.shape == (2, 3, 5)


def test_loss_by_hand_counts_real_tokens_only():
    probs = torch.full((V,), 0.05)
    probs[5], probs[EOS_ID] = 0.3, 0.25
    probs = probs / probs.sum()
    dec = fixed_distribution_decoder(probs)
    tokens, lengths = torch.tensor([[5, 6, 5], [7, 0, 0]]), torch.tensor([3, 1])
    nll, count, _ = dec.loss(torch.randn(2, 4), tokens, lengths)
    # targets: 5 6 5 </s> | 7 </s>
    expected = -(2 * probs[5].log() + probs[6].log() + probs[7].log() + 2 * probs[EOS_ID].log())
    assert int(count) == 6
    assert math.isclose(float(nll), float(expected), rel_tol=1e-5)
    wide = torch.cat([tokens, torch.zeros(2, 4, dtype=torch.long)], 1)  # more padding: same loss
    assert math.isclose(float(dec.loss(torch.randn(2, 4), wide, lengths)[0]), float(expected), rel_tol=1e-5)
    means = token_mean(nll, count, torch.tensor(3))
    assert math.isclose(float(means["loss"]), float(expected) / 6, rel_tol=1e-6)
    assert math.isclose(float(means["ppl"]), math.exp(float(expected) / 6), rel_tol=1e-5)
    assert math.isclose(float(means["token_acc"]), 0.5)


def test_greedy_stops_at_eos():
    probs = torch.full((V,), 0.05)
    probs[EOS_ID] = 0.6
    assert fixed_distribution_decoder(probs / probs.sum()).greedy(torch.randn(3, 4), max_len=7) == [[], [], []]
    probs = torch.full((V,), 0.05)
    probs[6] = 0.6
    assert fixed_distribution_decoder(probs / probs.sum()).greedy(torch.randn(2, 4), max_len=4) == [[6] * 4] * 2


def test_greedy_rows_end_independently():
    """A row that emits </s> early keeps its words; another row goes on."""
    torch.manual_seed(0)
    dec = GRUDecoder(V, condition_dim=4, embed_dim=3, hidden_dim=5, condition="input")
    out = dec.greedy(torch.randn(6, 4) * 5, max_len=6)
    assert all(EOS_ID not in row and len(row) <= 6 for row in out)


def test_unknown_condition_is_refused():
    with pytest.raises(ValueError, match="use one of"):
        GRUDecoder(V, 4, condition="attention")
