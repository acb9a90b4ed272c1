"""The debug config group, run tags and the saved config tree."""
from __future__ import annotations

import pytest

from sentence_lab.runs.config_tree import config_tree
from sentence_lab.runs.run import fit
from tests.helpers.train_config import compose_train_cfg


@pytest.mark.parametrize("name,key,value", [("fdr", "fast_dev_run", True), ("overfit", "overfit_batches", 3),
                                            ("limit", "limit_train_batches", 0.01), ("profiler", "profiler", "simple")])
def test_debug_configs_compose_on_cpu_without_the_suite(name, key, value, tiny_corpus, tmp_path):
    cfg = compose_train_cfg(tiny_corpus, tmp_path, [f"debug={name}"])
    assert cfg.trainer[key] == value and cfg.trainer.accelerator == "cpu" and cfg.task_name == "debug"
    assert cfg.callbacks.eval_suite is None


@pytest.mark.slow
def test_overfit_debug_run_drives_the_loss_down(tiny_corpus, tmp_path):
    cfg = compose_train_cfg(tiny_corpus, tmp_path, ["debug=overfit", "encoder=bow",
                                                   "logger=none", "trainer.max_epochs=15", "model.optimizer.lr=0.05",
                                                   "~callbacks.rich_progress_bar", "~callbacks.model_summary"])
    trainer, _ = fit(cfg)
    # An untrained model spreads a row over its 7 batch mates: loss ~ log(7) = 1.95; 3 memorised batches go far below.
    assert float(trainer.callback_metrics["train/loss_epoch"]) < 1.0


def test_config_tree_is_saved_with_groups_first(tiny_corpus, tmp_path):
    cfg = compose_train_cfg(tiny_corpus, tmp_path, ["tags=[baseline,qt]"])
    text = config_tree(cfg, save_to=tmp_path / "config_tree.log", show=False)
    saved = (tmp_path / "config_tree.log").read_text()
    assert saved == text and saved.index("data") < saved.index("encoder") < saved.index("objective")
    assert "baseline" in saved and str(tiny_corpus / "train") in saved
