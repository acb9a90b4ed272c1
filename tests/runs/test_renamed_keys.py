"""The old ``callbacks.senteval`` key still works, with a warning naming ``callbacks.eval_suite``."""
from __future__ import annotations

import sys

import pytest
from omegaconf import OmegaConf

from sentence_lab.runs.renamed_keys import move_renamed_nodes, renamed_overrides
from tests.helpers.in_process import run_command
from tests.helpers.train_config import ROOT


def test_old_overrides_are_spelled_the_new_way_with_a_warning():
    old = ["~callbacks.senteval", "callbacks.senteval.tasks=[Length]", "evaluation@callbacks.senteval.params=full",
           "+callbacks.senteval.params.kfold=5"]
    with pytest.warns(FutureWarning, match="callbacks.senteval is deprecated: use callbacks.eval_suite"):
        new = renamed_overrides(old)
    assert new == ["~callbacks.eval_suite", "callbacks.eval_suite.tasks=[Length]",
                   "evaluation@callbacks.eval_suite.params=full", "+callbacks.eval_suite.params.kfold=5"]


def test_other_overrides_mentioning_senteval_are_left_alone(recwarn):
    keep = ["callbacks.eval_suite.data_dir=/data/senteval", "callbacks.senteval_extra=1", "my.callbacks.senteval=2",
            "probing=senteval"]
    assert renamed_overrides(keep) == keep
    assert not [w for w in recwarn if issubclass(w.category, FutureWarning)]


def test_an_old_node_from_a_config_file_is_merged_into_the_new_key():
    cfg = OmegaConf.create({"callbacks": {"eval_suite": {"tasks": ["MR"], "every_n_epochs": 1},
                                          "senteval": {"tasks": ["Length"]}}})
    OmegaConf.set_struct(cfg, True)
    with pytest.warns(FutureWarning, match="use callbacks.eval_suite"):
        move_renamed_nodes(cfg)
    assert OmegaConf.to_container(cfg.callbacks) == {"eval_suite": {"tasks": ["Length"], "every_n_epochs": 1}}
    move_renamed_nodes(cfg)  # again: nothing left to move
    assert list(cfg.callbacks) == ["eval_suite"]


@pytest.mark.slow
def test_train_py_takes_the_old_key_on_its_command_line():
    done = run_command([sys.executable, str(ROOT / "train.py"), "callbacks.senteval.tasks=[Length]", "--cfg", "job"],
                       cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert OmegaConf.create(done.stdout)["callbacks"]["eval_suite"]["tasks"] == ["Length"]
    assert "callbacks.senteval is deprecated: use callbacks.eval_suite" in done.stderr
