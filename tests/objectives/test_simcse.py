"""objective=simcse against the paper's equations written out by hand (Gao, Yao and Chen 2021: eq. 4, unsupervised;
eq. 5, with hard negatives), the gradient through both views, the refusal of an encoder without dropout, and a short
run of train.py's code."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from sentence_lab.encoders.bilstm import BiLSTMMaxEncoder
from sentence_lab.encoders.transformer import TransformerEncoder
from sentence_lab.objectives.simcse import SimCSE, has_dropout, simcse_loss
from sentence_lab.runs.run import fit
from sentence_lab.text import Vocab
from sentence_lab.text.padding import pad_batch
from sentence_lab.text.vocab import SPECIALS
from tests.helpers.train_config import compose_objective_cfg

VOCAB = Vocab(list(SPECIALS) + [f"w{i}" for i in range(20)])
SENTENCES = [[4, 5, 6], [7, 8], [9, 10, 11, 12, 13], [14], [15, 16, 17, 18]]


def cosine(u: list[float], v: list[float]) -> float:
    dot = sum(a * b for a, b in zip(u, v))
    return dot / math.sqrt(sum(a * a for a in u) * sum(b * b for b in v))


def by_hand(h: list[list[float]], plus: list[list[float]], minus: list[list[float]] | None, tau: float) -> float:
    """Mean over i of -log(exp(sim(h_i, h_i+)/tau) / sum_j [exp(sim(h_i, h_j+)/tau) (+ exp(sim(h_i, h_j-)/tau))])."""
    total = 0.0
    for i, anchor in enumerate(h):
        denominator = sum(math.exp(cosine(anchor, p) / tau) for p in plus)
        if minus is not None:
            denominator += sum(math.exp(cosine(anchor, n) / tau) for n in minus)
        total += -math.log(math.exp(cosine(anchor, plus[i]) / tau) / denominator)
    return total / len(h)


H = [[1.0, 0.0, 0.5], [0.2, 1.0, -0.3], [-0.4, 0.3, 1.0], [0.7, 0.7, 0.1]]
PLUS = [[0.9, 0.1, 0.4], [0.0, 1.0, 0.0], [-0.5, 0.2, 0.8], [1.0, 0.2, -0.2]]
MINUS = [[-1.0, 0.1, 0.0], [0.3, -0.8, 0.2], [0.5, 0.5, -1.0], [0.6, 0.8, 0.0]]


@pytest.mark.parametrize("tau", [0.05, 1.0])
def test_the_unsupervised_loss_is_eq_4(tau):
    loss, correct = simcse_loss(torch.tensor(H), torch.tensor(PLUS), temperature=tau)
    assert loss.item() == pytest.approx(by_hand(H, PLUS, None, tau), rel=1e-5)
    best = [max(range(4), key=lambda j, i=i: cosine(H[i], PLUS[j])) for i in range(4)]
    assert correct.tolist() == [b == i for i, b in enumerate(best)]


@pytest.mark.parametrize("tau", [0.05, 1.0])
def test_the_loss_with_hard_negatives_is_eq_5(tau):
    loss, _ = simcse_loss(torch.tensor(H), torch.tensor(PLUS), torch.tensor(MINUS), temperature=tau)
    assert loss.item() == pytest.approx(by_hand(H, PLUS, MINUS, tau), rel=1e-5)
    # the hard negatives only add to each denominator: the loss can only grow
    assert loss.item() > simcse_loss(torch.tensor(H), torch.tensor(PLUS), temperature=tau)[0].item()


def transformer(dropout: float = 0.1, attention_dropout: float = 0.1) -> TransformerEncoder:
    return TransformerEncoder(VOCAB, embed_dim=8, d_model=8, num_layers=2, num_heads=2, ffn_dim=16, dropout=dropout,
                              attention_dropout=attention_dropout)


def batch() -> dict[str, torch.Tensor]:
    tokens, lengths = pad_batch(SENTENCES)
    return {"tokens": tokens, "lengths": lengths, "doc_ids": torch.zeros(len(SENTENCES), dtype=torch.long)}


def test_the_two_views_differ_and_the_gradient_reaches_the_encoder_through_both():
    torch.manual_seed(0)
    objective = SimCSE(transformer).train()
    seen = []

    def keep(module: nn.Module, args: tuple, out: torch.Tensor) -> None:
        out.retain_grad()
        seen.append(out)

    objective.f.register_forward_hook(keep)
    out = objective(batch())
    (both,) = seen
    anchors, positives = both.detach().split(len(SENTENCES))
    assert not torch.allclose(anchors, positives)  # independent dropout masks per row
    out["loss"].backward()
    assert both.grad[: len(SENTENCES)].abs().sum() > 0 and both.grad[len(SENTENCES):].abs().sum() > 0
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in objective.f.blocks.parameters())


def test_validation_is_the_same_task_the_same_every_time_and_leaves_the_training_rng_as_it_was():
    objective = SimCSE(transformer).eval()
    first = objective.evaluation_step(batch())
    assert not objective.f.training  # put back
    torch.manual_seed(7)
    again = objective.evaluation_step(batch())
    after = torch.rand(3)
    torch.manual_seed(7)
    assert torch.equal(after, torch.rand(3))  # the views' masks came from a forked generator
    assert first["loss"].item() == again["loss"].item() > 0  # two views with dropout: not one vector
    eval_vectors = objective.embed(*pad_batch(SENTENCES))
    assert torch.equal(eval_vectors, objective.embed(*pad_batch(SENTENCES)))  # embedding: no dropout


def test_an_encoder_without_dropout_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"objective=simcse: the encoder BiLSTMMaxEncoder has no dropout.*"
                                         r"encoder\.dropout=0\.1"):
        SimCSE(lambda: BiLSTMMaxEncoder(VOCAB, embed_dim=8, hidden_dim=8))
    assert has_dropout(BiLSTMMaxEncoder(VOCAB, embed_dim=8, hidden_dim=8, dropout=0.1))
    assert has_dropout(transformer(dropout=0.0, attention_dropout=0.1))  # attention dropout alone
    assert not has_dropout(transformer(dropout=0.0, attention_dropout=0.0))
    assert has_dropout(nn.LSTM(4, 4, num_layers=2, dropout=0.2)) and not has_dropout(nn.LSTM(4, 4, dropout=0.0))
    with pytest.raises(ValueError, match="temperature"):
        SimCSE(transformer, temperature=0.0)


@pytest.mark.slow
def test_simcse_trains_a_bilstm_with_dropout_through_train_pys_code(tiny_corpus, tiny_pairs, tmp_path):
    overrides = ["encoder=bilstm_max", "encoder.hidden_dim=16", "encoder.dropout=0.1", "++trainer.fast_dev_run=true",
                 "logger=none", "~callbacks.rich_progress_bar", "~callbacks.model_summary"]
    cfg = compose_objective_cfg("simcse", tiny_corpus, tiny_pairs, tmp_path, overrides)
    trainer, model = fit(cfg)
    assert cfg.monitor == "val/simcse_acc" and cfg.monitor in trainer.callback_metrics
    assert torch.isfinite(trainer.callback_metrics["train/loss_epoch"])
    assert model.encode(["The old man saw the river.", "A dog ran"]).shape == (2, 32)
