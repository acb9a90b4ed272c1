import math

import pytest
import torch
from torch import nn

from sentence_lab.objectives.qt import QuickThoughts, context_targets, qt_loss


def test_targets_spread_over_previous_and_next_within_a_document():
    t = context_targets(torch.tensor([0, 0, 0, 1, 1]))
    expected = torch.tensor([
        [0, 1, 0, 0, 0],
        [0.5, 0, 0.5, 0, 0],
        [0, 1, 0, 0, 0],  # its next sentence starts another document
        [0, 0, 0, 0, 1],
        [0, 0, 0, 1, 0],
    ])
    assert torch.equal(t, expected)
    wide = context_targets(torch.zeros(5, dtype=torch.long), context_size=5)
    assert torch.allclose(wide[2], torch.tensor([0.25, 0.25, 0, 0.25, 0.25]))
    with pytest.raises(ValueError, match="odd"):
        context_targets(torch.zeros(3, dtype=torch.long), context_size=4)


def test_qt_loss_on_a_hand_computed_four_sentence_batch():
    ln2 = math.log(2)
    scores = torch.tensor([
        [9.0, 0.0, 0.0, 0.0],   # own column excluded: uniform over 3, target {1}: loss ln 3
        [ln2, 9.0, 0.0, 0.0],   # probs 1/2, 1/4, 1/4 over {0,2,3}; target .5 on 0 and 2: 1.5 ln 2
        [0.0, 0.0, 9.0, 0.0],   # uniform, target .5 on 1 and 3: ln 3
        [0.0, 0.0, ln2, 9.0],   # probs 1/4, 1/4, 1/2; target {2}: ln 2
    ])
    loss, correct = qt_loss(scores, context_targets(torch.zeros(4, dtype=torch.long)))
    assert loss.item() == pytest.approx((2 * math.log(3) + 2.5 * ln2) / 4, abs=1e-6)
    assert correct.tolist() == [True, True, False, True]


class FixedEncoder(nn.Module):
    """Looks its vector up by the first token id."""

    def __init__(self, table: torch.Tensor) -> None:
        super().__init__()
        self.table = nn.Parameter(table.clone())
        self.output_dim = table.shape[1]

    def forward(self, tokens, lengths):
        return self.table[tokens[:, 0]]


def test_quick_thoughts_scores_f_against_g_and_embeds_their_concatenation():
    f_table, g_table = torch.randn(4, 3), torch.randn(4, 3)
    tables = iter([f_table, g_table])
    qt = QuickThoughts(lambda: FixedEncoder(next(tables)))
    batch = {"tokens": torch.arange(4)[:, None], "lengths": torch.ones(4, dtype=torch.long),
             "doc_ids": torch.zeros(4, dtype=torch.long)}
    out = qt(batch)
    expected, _ = qt_loss(f_table @ g_table.T, context_targets(batch["doc_ids"]))
    assert out["loss"].item() == pytest.approx(expected.item(), abs=1e-6)
    assert torch.equal(qt.embed(batch["tokens"], batch["lengths"]), torch.cat([f_table, g_table], 1))
    out["loss"].backward()
    assert qt.f.table.grad is not None and qt.g.table.grad is not None


def test_shared_encoder_uses_one_set_of_parameters():
    qt = QuickThoughts(lambda: FixedEncoder(torch.randn(4, 3)), shared_encoder=True)
    assert qt.f is qt.g and qt.output_dim == 3


def test_a_batch_without_neighbours_gives_a_zero_finite_loss_not_nan():
    scores = torch.randn(3, 3, requires_grad=True)
    loss, correct = qt_loss(scores, context_targets(torch.tensor([0, 1, 2])))
    assert loss.item() == 0.0 and correct.numel() == 0
    loss.backward()
    assert torch.isfinite(scores.grad).all()


def test_cosine_scores_are_scaled_cosines():
    from sentence_lab.objectives.qt import pair_scores

    u = torch.tensor([[3.0, 4.0], [1.0, 0.0]])
    v = torch.tensor([[0.0, 2.0], [-5.0, 0.0]])
    expected = torch.tensor([[0.8, -0.6], [0.0, -1.0]]) / 0.5
    torch.testing.assert_close(pair_scores(u, v, "cosine", 0.5), expected)
    torch.testing.assert_close(pair_scores(u, v, "dot"), u @ v.T)
    with pytest.raises(ValueError, match="similarity"):
        QuickThoughts(lambda: FixedEncoder(torch.zeros(2, 2)), similarity="euclid")
