"""objective=simcse against the paper's equations written out by hand (Gao, Yao and Chen 2021: eq. 4, unsupervised;
eq. 5, with hard negatives), the gradient through both views (and the three sides of a triple), the refusal of an
encoder without dropout, the negatives gathered over two gloo processes, and short runs of train.py's code."""
from __future__ import annotations

import math
import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from sentence_lab.encoders.bilstm import BiLSTMMaxEncoder
from sentence_lab.encoders.transformer import TransformerEncoder
from sentence_lab.objectives.contract import SENTENCES, TRIPLES
from sentence_lab.objectives.simcse import SimCSE, has_dropout, simcse_loss
from sentence_lab.runs.run import fit
from sentence_lab.text import Vocab
from sentence_lab.text.padding import pad_batch
from sentence_lab.text.vocab import SPECIALS
from tests.helpers.nli_files import write_infersent, write_nli_tsv
from tests.helpers.train_config import compose_default_cfg, compose_objective_cfg

VOCAB = Vocab(list(SPECIALS) + [f"w{i}" for i in range(20)])
TEXTS = [[4, 5, 6], [7, 8], [9, 10, 11, 12, 13], [14], [15, 16, 17, 18]]


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
    tokens, lengths = pad_batch(TEXTS)
    return {"tokens": tokens, "lengths": lengths, "doc_ids": torch.zeros(len(TEXTS), dtype=torch.long)}


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
    anchors, positives = both.detach().split(len(TEXTS))
    assert not torch.allclose(anchors, positives)  # independent dropout masks per row
    out["loss"].backward()
    assert both.grad[: len(TEXTS)].abs().sum() > 0 and both.grad[len(TEXTS):].abs().sum() > 0
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
    eval_vectors = objective.embed(*pad_batch(TEXTS))
    assert torch.equal(eval_vectors, objective.embed(*pad_batch(TEXTS)))  # embedding: no dropout


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


def triples_batch() -> dict[str, torch.Tensor]:
    """Three sides of different widths: premises, their positives (longer) and their negatives (shorter)."""
    sides = {"a": TEXTS[:4], "b": [s + [19, 20, 21] for s in TEXTS[1:5]], "c": [s[:1] for s in TEXTS[:4]]}
    out = {}
    for side, texts in sides.items():
        out[f"{side}_tokens"], out[f"{side}_lengths"] = pad_batch(texts)
    return out


def test_the_supervised_form_is_eq_5_over_the_three_sides_each_encoded_as_alone():
    torch.manual_seed(0)
    objective = SimCSE(lambda: transformer(dropout=0.0, attention_dropout=0.0), form="supervised")
    b = triples_batch()
    out = objective(b)  # one pass over the three sides, padded to one width
    alone = [objective.embed(b[f"{s}_tokens"], b[f"{s}_lengths"]).tolist() for s in "abc"]
    assert out["loss"].item() == pytest.approx(by_hand(*alone, tau=0.05), rel=1e-4)
    out["loss"].backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in objective.f.blocks.parameters())
    # validation is the same task as the model is: dropout off, no seed of its own
    assert objective.evaluation_step(b)["loss"].item() == pytest.approx(out["loss"].item(), rel=1e-6)


def test_the_form_decides_the_batch_the_objective_consumes_and_a_wrong_one_is_refused():
    assert SimCSE.spec_for({}).batch is SENTENCES and SimCSE.spec_for({"form": "unsupervised"}).default_data == "books"
    supervised = SimCSE.spec_for({"form": "supervised"})
    assert supervised.batch is TRIPLES and supervised.default_data == "nli"
    with pytest.raises(ValueError, match=r"objective\.form=pairs: use unsupervised .* or supervised"):
        SimCSE(transformer, form="pairs")
    # the supervised form's views are different sentences: an encoder without dropout is fine
    SimCSE(lambda: BiLSTMMaxEncoder(VOCAB, embed_dim=8, hidden_dim=8), form="supervised")


def _gathered_gradients(rank: int, world: int, port: int, out: dict) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        torch.manual_seed(0)  # the same weights in every process, as DDP starts them
        objective = SimCSE(lambda: transformer(dropout=0.0, attention_dropout=0.0), form="supervised", gather=True)
        b = triples_batch()
        half = {k: v[2 * rank: 2 * rank + 2] for k, v in b.items()}  # each process its two triples
        objective(half)["loss"].backward()
        for p in objective.parameters():  # what DDP does to the gradients: their mean over the processes
            if p.grad is not None:
                dist.all_reduce(p.grad)
                p.grad /= world
        if rank == 0:
            out["grads"] = {n: p.grad.clone() for n, p in objective.named_parameters() if p.grad is not None}
        uneven = {k: v[:3] if rank == 0 else v[3:] for k, v in b.items()}  # an epoch's short last batch: 3 and 1
        with torch.no_grad():
            out[f"uneven_loss_{rank}"] = objective(uneven)["loss"].item()
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
@pytest.mark.second_part
def test_gathered_negatives_over_two_processes_give_the_gradient_of_one_batch_of_both(tmp_path):
    """Two gloo processes of two triples each with objective.gather=true: the mean of their gradients is the
    gradient of the loss over one batch of the four triples in one process."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with mp.Manager() as manager:
        out = manager.dict()
        mp.spawn(_gathered_gradients, args=(2, port, out), nprocs=2, join=True)
        gathered = dict(out["grads"])
        out_losses = [out["uneven_loss_0"], out["uneven_loss_1"]]
    torch.manual_seed(0)
    whole = SimCSE(lambda: transformer(dropout=0.0, attention_dropout=0.0), form="supervised")
    whole(triples_batch())["loss"].backward()
    for name, p in whole.named_parameters():
        if p.grad is not None:
            torch.testing.assert_close(gathered[name], p.grad, rtol=1e-4, atol=1e-6)
    # batches of 3 and 1 triples: each process's rows against all four positives and negatives
    with torch.no_grad():
        vectors = [whole.embed(b[f"{side}_tokens"], b[f"{side}_lengths"]) for b in [triples_batch()] for side in "abc"]
    for rank, rows in ((0, slice(0, 3)), (1, slice(3, 4))):
        expected = simcse_loss(vectors[0][rows], vectors[1], vectors[2], 0.05, rows.start)[0].item()
        assert out_losses[rank] == pytest.approx(expected, rel=1e-5)
    # without gathering, each process sees only its own batch's negatives: another gradient
    torch.manual_seed(0)
    local = SimCSE(lambda: transformer(dropout=0.0, attention_dropout=0.0), form="supervised")
    for rank in (0, 1):
        (local({k: v[2 * rank: 2 * rank + 2] for k, v in triples_batch().items()})["loss"] / 2).backward()
    assert not all(torch.allclose(q.grad, gathered[n], rtol=1e-3) for n, q in local.named_parameters()
                   if q.grad is not None)


@pytest.mark.slow
def test_simcse_trains_a_bilstm_with_dropout_through_train_pys_code(tiny_corpus, tiny_pairs, tmp_path):
    overrides = ["encoder=bilstm_max", "encoder.hidden_dim=16", "encoder.dropout=0.1", "++trainer.fast_dev_run=true",
                 "logger=none", "~callbacks.rich_progress_bar", "~callbacks.model_summary"]
    cfg = compose_objective_cfg("simcse", tiny_corpus, tiny_pairs, tmp_path, overrides)
    trainer, model = fit(cfg)
    assert cfg.monitor == "val/simcse_acc" and cfg.monitor in trainer.callback_metrics
    assert torch.isfinite(trainer.callback_metrics["train/loss_epoch"])
    assert model.encode(["The old man saw the river.", "A dog ran"]).shape == (2, 32)


@pytest.mark.slow
def test_the_supervised_form_trains_on_data_nli_through_train_pys_code(tmp_path):
    snli = tmp_path / "snli"
    write_infersent(snli, "dev", 8)
    write_infersent(snli, "test", 8)
    overrides = ["objective=simcse", "objective.form=supervised", "data=nli", "encoder=bilstm_max",
                 "encoder.hidden_dim=16", "encoder.embedding_init=random", "encoder.embed_dim=16",
                 f"data.train.path={write_nli_tsv(tmp_path / 'train.tsv', 40)}", f"data.valid.path={snli}",
                 f"data.test.snli_test.path={snli}", "~data.test.mnli_dev", "~data.test.xnli_en_test",
                 "data.batch_size=8", f"paths.cache_dir={tmp_path / 'cache'}", "trainer.max_epochs=1",
                 "logger=none", "~callbacks.rich_progress_bar", "~callbacks.model_summary"]
    cfg = compose_default_cfg(tmp_path / "run", overrides)
    trainer, model = fit(cfg)
    assert trainer.datamodule.batch is TRIPLES and len(trainer.datamodule.datasets["train"]) == 40
    assert trainer.datamodule.triples_left_out["train"] == {"premises_skipped": 1, "hypotheses_unpaired": 0}
    assert trainer.global_step == 5 and cfg.monitor == "val/simcse_acc" and cfg.monitor in trainer.callback_metrics
    assert 0 < trainer.callback_metrics["val/loss"] < math.log(16) + 1  # 8 positives + 8 negatives a row
    assert len(trainer.datamodule.datasets["test/snli_test"]) == 8  # the test sets grouped too


def test_the_supervised_form_without_nli_data_names_data_nli(tiny_corpus, tiny_pairs, tmp_path):
    cfg = compose_objective_cfg("simcse", tiny_corpus, tiny_pairs, tmp_path, ["objective.form=supervised",
                                                                               "logger=none"])
    with pytest.raises(ValueError, match=r"objective=simcse consumes triples batches but data=.* yields sentences: "
                                         r"use data=nli"):
        fit(cfg)
