"""InferSent's schedule: x0.99 per epoch, /5 when dev accuracy does not improve, stop below the floor."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from sentence_lab.training.schedules import InferSentSchedule


def fake_trainer(lr: float) -> SimpleNamespace:
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)
    return SimpleNamespace(optimizers=[optimizer], current_epoch=0, sanity_checking=False, callback_metrics={},
                           should_stop=False)


def lr(trainer) -> float:
    return trainer.optimizers[0].param_groups[0]["lr"]


def test_schedule_by_hand():
    sched = InferSentSchedule(decay=0.99, shrink=5.0, min_lr=1e-3)
    t = fake_trainer(0.1)
    history, stopped = [], []
    for epoch, acc in enumerate([0.50, 0.60, 0.55, 0.58, 0.61, 0.40]):
        t.current_epoch = epoch
        sched.on_train_epoch_start(t, None)
        t.callback_metrics["val/acc"] = torch.tensor(acc)
        sched.on_validation_end(t, None)
        history.append(lr(t))
        stopped.append(t.should_stop)
    # epoch 0: 0.1; 1: x0.99; 2: x0.99 /5 (0.55 < 0.60); 3: x0.99 /5 (0.58 < 0.60); 4: x0.99 (best)
    expected = [0.1, 0.099, 0.099 * 0.99 / 5, 0.099 * 0.99 ** 2 / 25, 0.099 * 0.99 ** 3 / 25]
    assert history[:5] == pytest.approx(expected)
    assert stopped[:5] == [False] * 5
    # epoch 5: 0.40 < 0.61 -> /5 again: 0.099 * 0.99^4 / 125 = 7.6e-4 < 1e-3 -> stop
    assert history[5] == pytest.approx(0.099 * 0.99 ** 4 / 125) and t.should_stop


def test_sanity_check_and_missing_metric_change_nothing():
    sched = InferSentSchedule()
    t = fake_trainer(0.1)
    t.sanity_checking = True
    t.callback_metrics["val/acc"] = torch.tensor(0.3)
    sched.on_validation_end(t, None)
    t.sanity_checking = False
    t.callback_metrics = {}
    sched.on_validation_end(t, None)
    assert lr(t) == 0.1 and sched.best is None and sched.state_dict() == {"best": None}


def test_warmup_linear_decay_by_hand():
    """10 planned steps, warmup 0.2: the factor rises 1/2, 2/2 over steps 0-1, then falls (10 - s) / 8 to 1/8 at
    the last step (9)."""
    from sentence_lab.training.schedules import warmup_linear_decay

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=2.0)
    sched = warmup_linear_decay(opt, total_steps=10, warmup=0.2)
    seen = []
    for _ in range(10):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen == pytest.approx([1.0, 2.0, 2.0, 1.75, 1.5, 1.25, 1.0, 0.75, 0.5, 0.25])
    with pytest.raises(ValueError, match="warmup=1.5"):
        warmup_linear_decay(opt, total_steps=10, warmup=1.5)


@pytest.mark.slow
def test_model_scheduler_steps_the_learning_rate(tiny_corpus, tmp_path):
    """model.scheduler reaches the optimiser: after the planned steps of a one-epoch run the rate has fallen to 0."""
    from sentence_lab.runs.run import fit
    from tests.helpers.train_config import compose_train_cfg

    cfg = compose_train_cfg(tiny_corpus, tmp_path, [
        "encoder=bow", "encoder.embed_dim=8", "encoder.embedding_init=random", "logger=none", "trainer.max_epochs=1",
        "~callbacks.rich_progress_bar", "~callbacks.model_summary", "model.optimizer.lr=0.01",
        "model.scheduler={_target_:sentence_lab.training.schedules.warmup_linear_decay,warmup:0.5}"])
    trainer, model = fit(cfg)
    total = trainer.global_step
    assert total >= 4
    assert trainer.optimizers[0].param_groups[0]["lr"] == 0.0  # constant without the schedule: 0.01
    assert model.hparams.scheduler["warmup"] == 0.5
