"""Settings are checked against their constructors' types and ranges before any data is read."""
from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf

from sentence_lab.runs.settings_check import SettingsError, check_resume_settings, check_settings
from tests.helpers.train_config import compose_train_cfg


@pytest.mark.parametrize("override, message", [
    ("data.batch_size=abc", "data.batch_size='abc' is a str: it must be an integer"),
    ("data.batch_size=0", "data.batch_size=0: it must be at least 1"),
    ("encoder.hidden_dim=1.5", "encoder.hidden_dim=1.5 is a float: it must be an integer"),
    ("model.optimizer.lr=0", "model.optimizer.lr=0: it must be above 0"),
    ("trainer.max_epochs=x", "trainer.max_epochs='x' is a str: it must be an integer or null"),
    ("encoder.freeze_embeddings=maybe", "encoder.freeze_embeddings='maybe' is a str: it must be true or false"),
    ("seed=abc", "seed='abc': it must be an integer"),
])
def test_a_wrong_setting_is_named_with_what_it_needs(override, message, tiny_corpus, tmp_path):
    cfg = compose_train_cfg(tiny_corpus, tmp_path, [override])
    with pytest.raises(SettingsError) as err:
        check_settings(cfg)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


@pytest.mark.parametrize("overrides", [[], ["encoder=gatedconv"], ["encoder=mc_bilstm_max"], ["objective=skipthought"],
                                       ["trainer.val_check_interval=0.2", "trainer.max_time=00:00:01:00"],
                                       ["model.optimizer.lr=1"]])
def test_valid_settings_pass(overrides, tiny_corpus, tmp_path):
    check_settings(compose_train_cfg(tiny_corpus, tmp_path, overrides))


def _checkpoint_of(tmp_path, encoder: dict, objective: dict) -> str:
    path = tmp_path / "last.ckpt"
    torch.save({"hyper_parameters": {"encoder": encoder, "objective": objective}}, path)
    return str(path)


def test_resuming_is_refused_naming_every_setting_that_differs(tmp_path):
    encoder = {"_target_": "sentence_lab.encoders.bow.BowEncoder", "embed_dim": 16, "pooling": "mean"}
    objective = {"_target_": "sentence_lab.objectives.qt.QuickThoughts", "temperature": 0.1}
    ckpt = _checkpoint_of(tmp_path, encoder, objective)
    cfg = OmegaConf.create({"ckpt_path": ckpt, "encoder": {**encoder, "embed_dim": 32},
                            "objective": {**objective, "temperature": 0.5}})
    with pytest.raises(SettingsError, match=r"encoder.embed_dim=32 \(the checkpoint has 16\); "
                                            r"objective.temperature=0.5 \(the checkpoint has 0.1\)"):
        check_resume_settings(cfg)


def test_a_setting_added_to_the_configs_since_does_not_block_resuming(tmp_path):
    encoder = {"_target_": "sentence_lab.encoders.bow.BowEncoder", "embed_dim": 16}
    ckpt = _checkpoint_of(tmp_path, encoder, {"_target_": "x.Y"})
    check_resume_settings(OmegaConf.create({"ckpt_path": ckpt, "encoder": {**encoder, "new_key": 1},
                                            "objective": {"_target_": "x.Y"}}))
    legacy = _checkpoint_of(tmp_path, {**encoder, "_target_": "encoders.bow.BowEncoder"}, {"_target_": "x.Y"})
    check_resume_settings(OmegaConf.create({"ckpt_path": legacy, "encoder": encoder,
                                            "objective": {"_target_": "x.Y"}}))  # names before sentence_lab.*
