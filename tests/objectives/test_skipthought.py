"""Skip-thought: neighbours inside a batch, the loss by hand, no NaN without neighbours."""
from __future__ import annotations

import math

import pytest
import torch

from sentence_lab.objectives.skipthought import SkipThought, centre_by_document, neighbour_rows
from sentence_lab.text import EOS_ID, SPECIALS, Vocab
from tests.helpers.toy import sum_encoder

VOCAB = Vocab(list(SPECIALS) + [f"w{i}" for i in range(6)])  # 10 words


def test_neighbour_rows_stay_inside_documents():
    doc_ids = torch.tensor([0, 0, 1, 1, 1])
    rows, other = neighbour_rows(doc_ids, +1)
    assert rows.tolist() == [0, 2, 3] and other.tolist() == [1, 3, 4]
    rows, other = neighbour_rows(doc_ids, -1)
    assert rows.tolist() == [1, 3, 4] and other.tolist() == [0, 2, 3]


def model_with_fixed_decoders(probs: torch.Tensor, targets=("previous", "next")) -> SkipThought:
    model = SkipThought(lambda side="source": sum_encoder({4: [1.0, 0.0]}, VOCAB), {"source": VOCAB},
                        targets=list(targets), embed_dim=3, hidden_dim=4)
    with torch.no_grad():
        for _, dec in model.named_decoders():
            dec.output.weight.zero_()
            dec.output.bias.copy_(probs.log())
    return model


def test_loss_by_hand_averages_over_real_target_tokens():
    probs = torch.linspace(1, 2, 10)
    probs = probs / probs.sum()
    model = model_with_fixed_decoders(probs)
    # Document 0: s0 = [4, 5], s1 = [6]; document 1: s2 = [7, 8, 9].
    batch = {"tokens": torch.tensor([[4, 5, 0], [6, 0, 0], [7, 8, 9]]), "lengths": torch.tensor([2, 1, 3]),
             "doc_ids": torch.tensor([0, 0, 1])}
    out = model(batch)
    # Only s0 -> s1 (next) and s1 -> s0 (previous): targets "6 </s>" and "4 5 </s>".
    nll = -(probs[6].log() + probs[4].log() + probs[5].log() + 2 * probs[EOS_ID].log())
    assert math.isclose(float(out["loss"]), float(nll) / 5, rel_tol=1e-5)
    next_only = model_with_fixed_decoders(probs, targets=["next"])(batch)
    assert math.isclose(float(next_only["loss"]), float(-(probs[6].log() + probs[EOS_ID].log())) / 2, rel_tol=1e-5)
    # ``current`` regenerates every sentence, whether or not it has a neighbour: 6 words and 3 </s> more.
    with_current = model_with_fixed_decoders(probs, targets=["previous", "current", "next"])(batch)
    own = -(probs[4:10].log().sum() + 3 * probs[EOS_ID].log())
    assert math.isclose(float(with_current["loss"]), float(nll + own) / 14, rel_tol=1e-5)


def test_batch_without_neighbours_gives_zero_loss_not_nan():
    model = model_with_fixed_decoders(torch.full((10,), 0.1))
    out = model({"tokens": torch.tensor([[4], [5]]), "lengths": torch.tensor([1, 1]), "doc_ids": torch.tensor([0, 1])})
    assert float(out["loss"]) == 0.0 and not torch.isnan(out["loss"])
    out["loss"].backward()


def test_unknown_target_is_refused():
    with pytest.raises(ValueError, match="previous"):
        SkipThought(lambda side="source": sum_encoder({4: [1.0]}, VOCAB), {"source": VOCAB}, targets=["after"])


def test_centre_by_document_subtracts_each_documents_mean_in_the_batch():
    vectors = torch.tensor([[1.0, 2.0], [3.0, 6.0], [0.0, 1.0], [3.0, 1.0], [6.0, 4.0], [5.0, 5.0]],
                           requires_grad=True)
    doc_ids = torch.tensor([7, 7, 2, 2, 2, 9])
    centred = centre_by_document(vectors, doc_ids)
    expected = [[-1.0, -2.0], [1.0, 2.0], [-3.0, -1.0], [0.0, -1.0], [3.0, 2.0], [0.0, 0.0]]
    assert torch.allclose(centred, torch.tensor(expected))
    # A gradient that would move every sentence of a document the same way reaches no sentence.
    centred.sum().backward()
    assert torch.allclose(vectors.grad, torch.zeros_like(vectors))


def test_centred_condition_hides_what_a_document_shares_from_the_decoders():
    def model(words: dict, centre: bool) -> SkipThought:
        torch.manual_seed(0)
        return SkipThought(lambda side="source": sum_encoder(words, VOCAB), {"source": VOCAB},
                           embed_dim=3, hidden_dim=4, centre_condition=centre)
    words = {4: [1.0, 0.0], 5: [0.0, 1.0]}
    # Every sentence of each document has the same vector: centred, the decoders read zeros, as from an encoder
    # that gives every sentence the zero vector.
    batch = {"tokens": torch.tensor([[4], [4], [5], [5]]), "lengths": torch.tensor([1, 1, 1, 1]),
             "doc_ids": torch.tensor([0, 0, 1, 1])}
    zeros = float(model({4: [0.0, 0.0], 5: [0.0, 0.0]}, False)(batch)["loss"])
    assert math.isclose(float(model(words, True)(batch)["loss"]), zeros, rel_tol=1e-6)
    assert not math.isclose(float(model(words, False)(batch)["loss"]), zeros, rel_tol=1e-6)
