"""Model selection: init.ckpt before any step, best.ckpt by the monitored metric, run dir -> best."""
from __future__ import annotations

import pytest
import torch
from lightning import Callback

from sentence_lab.checkpoints.choice import resolve_checkpoint
from sentence_lab.runs.run import fit
from sentence_lab.training.module import SentenceModel
from tests.helpers.train_config import compose_train_cfg

pytestmark = pytest.mark.slow  # end-to-end: outside the fast tier (-m "not slow")

QUIET = ["logger=none", "~callbacks.rich_progress_bar", "~callbacks.model_summary", "encoder=bow",
         "encoder.embed_dim=16", "encoder.embedding_init=random", "encoder.freeze_embeddings=false",
         "trainer.num_sanity_val_steps=0", "trainer.val_check_interval=1.0"]


class RecordVal(Callback):
    def __init__(self) -> None:
        self.losses: list[float] = []

    def on_validation_end(self, trainer, pl_module) -> None:
        self.losses.append(float(trainer.callback_metrics["val/loss"]))


def fit_with(cfg, callback: Callback, monkeypatch):
    """``fit(cfg)`` with one more callback next to the configured ones."""
    import sentence_lab.runs.run as run

    real = run._instantiate_group
    monkeypatch.setattr(run, "_instantiate_group",
                        lambda group: real(group) + ([callback] if group is cfg.get("callbacks") else []))
    return fit(cfg)


def test_best_checkpoint_is_the_best_validation_point_of_a_run_that_overfits(tiny_corpus, tmp_path, monkeypatch):
    # A large learning rate on 120 sentences: validation loss bottoms out early, then rises.
    cfg = compose_train_cfg(tiny_corpus, tmp_path, QUIET + ["trainer.max_epochs=8", "monitor=val/loss",
                                                            "monitor_mode=min", "model.optimizer.lr=0.05"])
    record = RecordVal()
    fit_with(cfg, record, monkeypatch)
    losses = record.losses
    best_epoch = min(range(len(losses)), key=losses.__getitem__)
    assert len(losses) == 8 and best_epoch < 4 and losses[-1] > losses[best_epoch]  # it did peak early
    folder = tmp_path / "checkpoints"
    best = torch.load(folder / "best.ckpt", weights_only=False)
    assert best["epoch"] == best_epoch
    assert torch.load(folder / "last.ckpt", weights_only=False)["epoch"] == 7
    assert resolve_checkpoint(tmp_path) == folder / "best.ckpt"
    assert resolve_checkpoint(folder / "last.ckpt") == folder / "last.ckpt"


def test_init_checkpoint_holds_the_weights_before_the_first_step(tiny_corpus, tmp_path):
    cfg = compose_train_cfg(tiny_corpus, tmp_path, QUIET + ["trainer.max_epochs=1"])
    torch.manual_seed(cfg.seed)
    _, model = fit(cfg)
    init = SentenceModel.load_checkpoint(str(tmp_path / "checkpoints" / "init.ckpt"), map_location="cpu")
    assert init.vocab.itos == model.vocab.itos
    # Re-seeding as fit does rebuilds the same initial weights.
    import lightning as L

    L.seed_everything(cfg.seed, workers=True)
    fresh = SentenceModel(encoder=cfg.encoder, objective=cfg.objective, vocab=model.vocab.itos,
                          optimizer=cfg.model.optimizer)
    for key, value in fresh.state_dict().items():
        assert torch.equal(init.state_dict()[key], value), key
    assert any(not torch.equal(init.state_dict()[k], v.cpu()) for k, v in model.state_dict().items())


def test_early_stopping_ends_a_run_patience_validations_after_its_best(tiny_corpus, tmp_path, monkeypatch):
    cfg = compose_train_cfg(tiny_corpus, tmp_path, QUIET + ["trainer.max_epochs=8", "monitor=val/loss",
                                                            "monitor_mode=min", "model.optimizer.lr=0.05",
                                                            "callbacks=[default,early_stopping]",
                                                            "callbacks.early_stopping.patience=2"])
    record = RecordVal()
    fit_with(cfg, record, monkeypatch)
    losses = record.losses
    best_epoch = min(range(len(losses)), key=losses.__getitem__)
    assert len(losses) == best_epoch + 3 < 8
    assert torch.load(tmp_path / "checkpoints" / "best.ckpt", weights_only=False)["epoch"] == best_epoch


def test_a_time_budget_ends_a_run_inside_its_first_epoch(tiny_corpus, tmp_path, monkeypatch):
    import time

    class SlowBatches(Callback):
        def on_train_batch_end(self, *args) -> None:
            time.sleep(0.3)

    cfg = compose_train_cfg(tiny_corpus, tmp_path, QUIET + ["trainer.max_epochs=1", "trainer.max_time=00:00:00:01"])
    trainer, _ = fit_with(cfg, SlowBatches(), monkeypatch)
    assert 0 < trainer.global_step < 10  # an epoch is 15 batches of 8 sentences


def test_resuming_with_another_vocabulary_is_an_error(tiny_corpus, tmp_path):
    import pytest

    fit(compose_train_cfg(tiny_corpus, tmp_path / "a", QUIET + ["trainer.max_epochs=1"]))
    last = tmp_path / "a" / "checkpoints" / "last.ckpt"
    cfg = compose_train_cfg(tiny_corpus, tmp_path / "b", QUIET + ["trainer.max_epochs=2", "data.vocab_size=12",
                                                                  f"ckpt_path={last}"])
    with pytest.raises(ValueError, match="vocabulary .* is not this run's"):
        fit(cfg)


def test_resume_true_continues_the_newest_run_in_its_directory(tiny_corpus, tmp_path):
    from tests.helpers.train_config import compose_train_cfg

    quiet = ["encoder=bow", "encoder.embed_dim=8", "encoder.embedding_init=random", "logger=none",
             "callbacks=[default,epoch_checkpoints]",
             "~callbacks.rich_progress_bar", "~callbacks.model_summary", "trainer.val_check_interval=1.0",
             f"paths.log_dir={tmp_path / 'logs'}", "task_name=t"]
    first = tmp_path / "logs" / "t" / "runs" / "first"
    fit(compose_train_cfg(tiny_corpus, first, quiet + ["trainer.max_epochs=1"]))
    cfg = compose_train_cfg(tiny_corpus, tmp_path / "logs" / "t" / "runs" / "second",
                            quiet + ["trainer.max_epochs=2", "resume=true"])
    trainer, _ = fit(cfg)
    assert cfg.ckpt_path == str(first / "checkpoints" / "last.ckpt") and trainer.current_epoch == 2
    assert (first / "checkpoints" / "epoch_001.ckpt").is_file()  # the second epoch was written into the first run


@pytest.mark.parametrize("links", [True, False])
def test_last_ckpt_becomes_the_stops_checkpoint_by_a_link_or_a_copy(tmp_path, monkeypatch, links):
    """``atomic_same_file``: last.ckpt holds the interrupted state; rewriting either name later leaves the other."""
    import os

    from sentence_lab.checkpoints.files import atomic_same_file, atomic_torch_save

    if not links:
        def no_link(*args, **kwargs):
            raise OSError("links not supported")

        monkeypatch.setattr(os, "link", no_link)
    interrupted, last = tmp_path / "interrupted.ckpt", tmp_path / "last.ckpt"
    atomic_torch_save({"global_step": 12}, last)
    atomic_torch_save({"global_step": 15}, interrupted)
    atomic_same_file(interrupted, last)
    assert torch.load(last, weights_only=True) == {"global_step": 15}
    assert os.path.samefile(interrupted, last) is links
    atomic_torch_save({"global_step": 20}, last)
    assert torch.load(interrupted, weights_only=True) == {"global_step": 15}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left
