"""Settings are checked against their constructors' types and ranges before any data is read."""
from __future__ import annotations

import pytest

from sentence_lab.training.settings_check import SettingsError, check_settings

from helpers.train_config import compose_train_cfg


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
