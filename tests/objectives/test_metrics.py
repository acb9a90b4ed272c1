import pytest
import torch

from sentence_lab.objectives.metrics import RunningMeans


def test_running_means_weight_by_batch_size_and_reset():
    meter = RunningMeans()
    assert not meter
    meter.update({"loss": torch.tensor(2.0), "acc": torch.tensor(0.5)}, batch_size=1)
    meter.update({"loss": torch.tensor(4.0), "acc": torch.tensor(1.0)}, batch_size=3)
    means = meter.means()
    assert means["loss"].item() == pytest.approx((2 + 12) / 4)
    assert means["acc"].item() == pytest.approx((0.5 + 3) / 4)
    meter.reset()
    assert not meter and meter.means() == {}


def test_running_means_do_not_keep_the_graph():
    w = torch.tensor(1.0, requires_grad=True)
    meter = RunningMeans()
    meter.update({"loss": w * 3}, batch_size=2)
    assert not meter.means()["loss"].requires_grad


def test_skip_non_finite_leaves_a_nan_batch_out_of_every_mean():
    meter = RunningMeans(skip_non_finite=True)
    meter.update({"loss": torch.tensor(2.0), "acc": torch.tensor(0.5)}, batch_size=1)
    meter.update({"loss": torch.tensor(float("nan")), "acc": torch.tensor(0.9)}, batch_size=5)
    meter.update({"loss": torch.tensor(float("inf")), "acc": torch.tensor(0.9)}, batch_size=5)
    meter.update({"loss": torch.tensor(4.0), "acc": torch.tensor(1.0)}, batch_size=3)
    means = meter.means()
    assert means["loss"].item() == pytest.approx((2 + 12) / 4)
    assert means["acc"].item() == pytest.approx((0.5 + 3) / 4)
    restored = RunningMeans(skip_non_finite=True)
    restored.load_state_dict(meter.state_dict())
    assert restored.means()["loss"].item() == pytest.approx(3.5)


def test_skip_non_finite_gives_nan_when_every_batch_was_left_out():
    meter = RunningMeans(skip_non_finite=True)
    meter.update({"loss": torch.tensor(float("nan"))}, batch_size=4)
    assert meter and torch.isnan(meter.means()["loss"])


def test_without_skipping_a_nan_batch_shows_in_the_mean():
    meter = RunningMeans()
    meter.update({"loss": torch.tensor(1.0)}, batch_size=1)
    meter.update({"loss": torch.tensor(float("nan"))}, batch_size=1)
    assert torch.isnan(meter.means()["loss"])


def test_means_saved_before_batches_were_left_out_resume_as_every_batch_kept():
    old = RunningMeans()
    old.update({"loss": torch.tensor(2.0)}, batch_size=10)
    state = old.state_dict()
    resumed = RunningMeans(skip_non_finite=True)
    resumed.load_state_dict(state)
    resumed.update({"loss": torch.tensor(2.0)}, batch_size=10)
    assert resumed.means()["loss"].item() == pytest.approx(2.0)
