"""model.compile: compiled encoders give the uncompiled vectors and gradients, one graph for every length."""
from __future__ import annotations

import pytest
import torch
from torch._dynamo.utils import counters

from sentence_lab.runs.run import fit
from sentence_lab.training.module import SentenceModel
from tests.helpers.train_config import compose_train_cfg

ENCODERS = {
    "bilstm_max": {"_target_": "sentence_lab.encoders.bilstm.BiLSTMMaxEncoder", "embed_dim": 8, "hidden_dim": 6},
    "bow": {"_target_": "sentence_lab.encoders.bow.BagOfWordsEncoder", "embed_dim": 8},
    "gatedconv": {"_target_": "sentence_lab.encoders.gated_conv.GatedConvEncoder", "embed_dim": 8,
                  "channels": 6, "num_layers": 2},
}
QT = {"_target_": "sentence_lab.objectives.qt.QuickThoughts"}


def qt_model(encoder: dict) -> SentenceModel:
    torch.manual_seed(0)
    words = ["<pad>", "<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(40)]
    return SentenceModel(encoder={**encoder, "embedding_init": "random"}, objective=QT, vocabs={"source": words},
                         optimizer={"_target_": "torch.optim.Adam", "lr": 1e-3})


def batches(rows: int = 40) -> list[dict[str, torch.Tensor]]:
    """Batches of consecutive sentences of different longest lengths; 40 rows: the recurrent encoders bucket."""
    g = torch.Generator().manual_seed(1)
    out = []
    for longest in (7, 12, 3, 19):
        lengths = torch.randint(1, longest + 1, (rows,), generator=g)
        lengths[0] = longest
        tokens = torch.randint(4, 44, (rows, longest), generator=g)
        tokens = tokens.masked_fill(torch.arange(longest)[None] >= lengths[:, None], 0)
        out.append({"tokens": tokens, "lengths": lengths, "doc_ids": torch.zeros(rows, dtype=torch.long)})
    return out


@pytest.mark.parametrize("name", sorted(ENCODERS))
@pytest.mark.slow
def test_compiled_encoders_give_the_same_losses_and_gradients_with_one_graph_for_every_length(name):
    torch._dynamo.reset()
    counters.clear()
    eager, compiled = qt_model(ENCODERS[name]), qt_model(ENCODERS[name])
    keys = list(compiled.state_dict())
    assert compiled.compile_encoders(backend="aot_eager") == 2  # QT's f and g
    assert list(compiled.state_dict()) == keys  # checkpoints are unchanged
    graphs = []
    for batch in batches():
        losses = []
        for model in (eager, compiled):
            model.zero_grad()
            loss = model.objective(batch)["loss"]
            loss.backward()
            losses.append(loss)
        torch.testing.assert_close(losses[1], losses[0], rtol=1e-5, atol=1e-6)
        for (_, p), (_, q) in zip(eager.named_parameters(), compiled.named_parameters()):
            if p.grad is not None:
                torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-6)
        graphs.append(counters["stats"]["unique_graphs"])
    assert graphs[0] > 0  # something was compiled
    assert graphs[1:] == graphs[:1] * 3  # no new graph for a new length (the first batch's are dynamic)


@pytest.mark.slow
def test_train_py_with_model_compile_trains_and_writes_an_uncompiled_checkpoint(tiny_corpus, tmp_path):
    torch._dynamo.reset()
    cfg = compose_train_cfg(tiny_corpus, tmp_path, [
        "encoder=bow", "encoder.embedding_init=random", "encoder.embed_dim=16", "trainer.max_steps=4",
        "trainer.val_check_interval=2", "logger=none", "model.compile={backend:aot_eager}"])
    trainer, model = fit(cfg)
    assert trainer.global_step == 4 and torch.isfinite(trainer.callback_metrics["train/loss_epoch"])
    assert model.objective.f._compiled_call_impl is not None and model.objective.g._compiled_call_impl is not None
    loaded = SentenceModel.load_checkpoint(str(tmp_path / "checkpoints" / "last.ckpt"), map_location="cpu")
    assert "compile" not in loaded.hparams
    torch.testing.assert_close(torch.from_numpy(loaded.encode(["w1 w2 w3", "w4"])),
                               torch.from_numpy(model.encode(["w1 w2 w3", "w4"])))
