"""NLI: InferSent's pair features and the classification loss by hand."""
from __future__ import annotations

import math

import torch

from sentence_lab.objectives.nli import NLI, pair_features
from tests.helpers.toy import one_word_batch, sum_encoder


def test_pair_features_are_u_v_absdiff_product():
    u, v = torch.tensor([[1.0, -2.0]]), torch.tensor([[3.0, 1.0]])
    assert pair_features(u, v).tolist() == [[1.0, -2.0, 3.0, 1.0, 2.0, 3.0, 3.0, -2.0]]


def test_loss_and_accuracy_by_hand():
    model = NLI(lambda side="source": sum_encoder({4: [1.0, 0.0], 5: [0.0, 1.0]}), hidden_dim=0)
    linear = model.classifier[0]
    with torch.no_grad():  # logits: class 0 <- u.x, class 1 <- v.y, class 2 <- |u-v| summed
        linear.weight.zero_()
        linear.bias.zero_()
        linear.weight[0, 0] = 1.0
        linear.weight[1, 3] = 1.0
        linear.weight[2, 4] = linear.weight[2, 5] = 1.0
    batch = one_word_batch([4, 4], [5, 4]) | {"labels": torch.tensor([2, 0])}
    out = model(batch)
    # pair 0: u = (1,0), v = (0,1): logits (1, 1, 2); pair 1: u = v = (1,0): logits (1, 0, 0)
    l0 = -(2 - math.log(math.e + math.e + math.e ** 2))
    l1 = -(1 - math.log(math.e + 1 + 1))
    assert math.isclose(float(out["loss"]), (l0 + l1) / 2, rel_tol=1e-6)
    assert float(out["acc"]) == 1.0
    assert model.embed(batch["a_tokens"], batch["a_lengths"]).tolist() == [[1.0, 0.0], [1.0, 0.0]]


def test_premises_and_hypotheses_are_encoded_in_one_pass_with_the_vectors_of_two():
    encoder = sum_encoder({4: [1.0, 0.0], 5: [0.0, 1.0], 6: [2.0, 3.0]})
    calls = []
    encoder.register_forward_hook(lambda module, args, out: calls.append(args[0].shape))
    model = NLI(lambda side="source": encoder, hidden_dim=4)
    batch = {"a_tokens": torch.tensor([[4, 6, 5], [5, 0, 0]]), "a_lengths": torch.tensor([3, 1]),
             "b_tokens": torch.tensor([[6], [4]]), "b_lengths": torch.tensor([1, 1]), "labels": torch.tensor([0, 2])}
    logits = model.logits(batch)
    assert calls == [torch.Size([4, 3])]  # one pass: both sides stacked, the narrower padded to the wider
    u, v = torch.tensor([[3.0, 4.0], [0.0, 1.0]]), torch.tensor([[2.0, 3.0], [1.0, 0.0]])
    torch.testing.assert_close(logits, model.classifier(pair_features(u, v)))
