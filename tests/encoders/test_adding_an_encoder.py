"""docs/adding-an-encoder.md, followed step by step: its module and config as written there, trained by train.py's
code with Quick-Thoughts on the fixture corpus, and its commands composed."""
from __future__ import annotations

import sys

import pytest
import torch
import yaml
from omegaconf import OmegaConf, open_dict

from sentence_lab.encoders.base import SentenceEncoder, is_trainable
from sentence_lab.runs.run import fit
from sentence_lab.text import SPECIALS, Vocab
from tests.helpers.recipes import compose_commands, conf_with, follow
from tests.helpers.train_config import compose_train_cfg

PAGE = "adding-an-encoder.md"


@pytest.fixture
def recipe(monkeypatch):
    module, config = follow(PAGE)
    yield module, config, yaml.safe_load(config)["_target_"]
    monkeypatch.delitem(sys.modules, module.__name__)


def test_the_module_keeps_the_encoder_contract(recipe):
    module, _, target = recipe
    assert is_trainable(target) and issubclass(module.MeanMaxEncoder, SentenceEncoder)
    torch.manual_seed(0)
    encoder = module.MeanMaxEncoder(vocab=Vocab(list(SPECIALS) + ["a", "b", "c"]), embed_dim=4)
    tokens, lengths = torch.tensor([[4, 5, 6], [5, 0, 0]]), torch.tensor([3, 1])
    out = encoder(tokens, lengths)
    assert out.shape == (2, encoder.output_dim) == (2, 8)
    padded = encoder(torch.nn.functional.pad(tokens, (0, 4)), lengths)  # more padding changes no vector
    assert torch.equal(out, padded)
    # by hand: mean and max of the one-word sentence are that word's vector
    word = encoder.embedding(torch.tensor([[5]]))[0, 0]
    assert torch.allclose(out[1], torch.cat([word, word]))


@pytest.mark.slow
def test_train_py_trains_it(recipe, tiny_corpus, tmp_path):
    _, config, _ = recipe
    cfg = compose_train_cfg(tiny_corpus, tmp_path, ["encoder=bow", "trainer.max_epochs=1", "logger=none",
                                                    "~callbacks.rich_progress_bar", "~callbacks.model_summary"])
    with open_dict(cfg):
        cfg.encoder = OmegaConf.create(yaml.safe_load(config))
    trainer, model = fit(cfg)
    assert trainer.state.finished and type(model.objective.f).__name__ == "MeanMaxEncoder"
    assert model.output_dim == 2 * 100  # Quick-Thoughts: f and g concatenated, each 2 x 50
    init = torch.load(tmp_path / "checkpoints" / "init.ckpt", map_location="cpu", weights_only=False)["state_dict"]
    key = "objective.f.embedding.embedding.weight"
    assert not torch.equal(init[key], model.state_dict()[key])  # the GloVe vectors were tuned


def test_the_pages_commands_compose(recipe, tmp_path):
    _, config, _ = recipe
    cfgs = compose_commands(PAGE, conf_with(tmp_path, "encoder", "mean_max", config))
    assert len(cfgs) == 3 and all(c.encoder._target_ == "sentence_lab.encoders.mean_max.MeanMaxEncoder" for c in cfgs)
