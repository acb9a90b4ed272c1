"""docs/adding-an-objective.md, followed step by step: its module and config as written there, the loss checked by
hand on a tiny batch, a short run of train.py's code on the fixture corpus, and the page's commands composed."""
from __future__ import annotations

import math
import sys

import pytest
import torch
import yaml
from omegaconf import OmegaConf, open_dict

from sentence_lab.objectives.contract import SENTENCES
from sentence_lab.runs.run import fit
from tests.helpers.recipes import compose_commands, conf_with, follow
from tests.helpers.train_config import compose_train_cfg

PAGE = "adding-an-objective.md"


@pytest.fixture
def recipe(monkeypatch):
    module, config = follow(PAGE)
    yield module, config
    monkeypatch.delitem(sys.modules, module.__name__)


class Fixed(torch.nn.Module):
    """An 'encoder' that returns given vectors by sentence index (tokens[:, 0])."""

    def __init__(self, vectors: torch.Tensor) -> None:
        super().__init__()
        self.vectors, self.output_dim = vectors, vectors.shape[1]

    def forward(self, tokens, lengths):
        return self.vectors[tokens[:, 0]]


def test_the_loss_is_the_pages_equation_by_hand(recipe):
    module, _ = recipe
    vectors = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    objective = module.NextSentence(encoder_factory=lambda: Fixed(vectors))
    assert objective.spec.batch == SENTENCES
    with torch.no_grad():
        objective.project.weight.copy_(torch.eye(2))
        objective.project.bias.zero_()
    # sentences 0, 1 in one document, 2 in the next: only 0 -> 1 is a target
    batch = {"tokens": torch.tensor([[0], [1], [2]]), "lengths": torch.tensor([1, 1, 1]),
             "doc_ids": torch.tensor([0, 0, 1])}
    out = objective(batch)
    # scores of sentence 0 against 1 and 2 (itself excluded): u0.u1 = 0, u0.u2 = 1
    expected = -math.log(math.exp(0.0) / (math.exp(0.0) + math.exp(1.0)))
    assert out["loss"].item() == pytest.approx(expected, abs=1e-6)
    assert out["next_acc"].item() == 0.0  # sentence 2 scores higher than the true next one


@pytest.mark.slow
def test_train_py_trains_it(recipe, tiny_corpus, tmp_path):
    _, config = recipe
    cfg = compose_train_cfg(tiny_corpus, tmp_path, ["encoder=bow", "trainer.max_epochs=2", "logger=none",
                                                    "~callbacks.rich_progress_bar", "~callbacks.model_summary"])
    settings = {k: v for k, v in yaml.safe_load(config).items() if k != "defaults"}
    with open_dict(cfg):
        cfg.objective = OmegaConf.create(settings)
        cfg.monitor = "val/next_acc"
    trainer, model = fit(cfg)
    assert trainer.state.finished and type(model.objective).__name__ == "NextSentence"
    assert "val/next_acc" in trainer.callback_metrics
    assert torch.isfinite(trainer.callback_metrics["val/loss"])


def test_the_pages_commands_compose(recipe, tmp_path):
    _, config = recipe
    cfgs = compose_commands(PAGE, conf_with(tmp_path, "objective", "next_sentence", config))
    assert len(cfgs) == 2 and all(c.objective._target_ == "sentence_lab.objectives.next_sentence.NextSentence"
                                  for c in cfgs)
    assert cfgs[0].encoder._target_.endswith("BiLSTMMaxEncoder") and cfgs[1].encoder._target_.endswith("GRUEncoder")
