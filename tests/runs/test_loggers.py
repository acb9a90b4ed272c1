"""A resumed run draws each step once in TensorBoard: the steps its interrupted start logged after the checkpoint
(trained and logged again on resume) are hidden from the display by the restart marker at the step it logs next."""
from __future__ import annotations

from collections import Counter

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

from sentence_lab.checkpoints.received import read_checkpoint
from sentence_lab.runs.run import fit
from tests.helpers.train_config import compose_train_cfg

pytestmark = pytest.mark.slow  # two short trainings


def _steps_per_file(folder) -> list[list[int]]:
    files = sorted(folder.glob("events.out.tfevents*"))
    return [[e.step for e in EventFileLoader(str(f)).Load() for v in e.summary.value if v.tag == "train/loss_step"]
            for f in files]


def test_a_resumed_runs_curve_has_each_step_once(tiny_corpus, tmp_path):
    common = ["encoder=bow", "encoder.embed_dim=16", "encoder.embedding_init=random", "logger=tensorboard",
              "trainer.log_every_n_steps=1", "callbacks=[default,epoch_checkpoints]", "~callbacks.rich_progress_bar",
              "trainer.max_epochs=10"]
    # the first start trains past its first epoch's checkpoint, then the run resumes from that checkpoint
    fit(compose_train_cfg(tiny_corpus, tmp_path, [*common, "trainer.max_steps=20"]))
    saved = tmp_path / "checkpoints" / "epoch_000.ckpt"
    at = int(read_checkpoint(saved)["global_step"])
    assert 0 < at < 19
    fit(compose_train_cfg(tiny_corpus, tmp_path, [*common, "trainer.max_steps=25", f"ckpt_path={saved}"]))

    first, resumed = _steps_per_file(tmp_path / "tensorboard")
    assert set(range(at + 1, 20)) <= set(first) & set(resumed)  # the steps after the checkpoint: by both starts
    shown = EventAccumulator(str(tmp_path / "tensorboard"))
    shown.Reload()
    for tag in ("train/loss_step", "val/loss"):
        steps = [event.step for event in shown.Scalars(tag)]
        assert steps == sorted(steps) and not [s for s, n in Counter(steps).items() if n > 1], (tag, steps)
    steps = [e.step for e in shown.Scalars("train/loss_step")]
    assert steps == list(range(steps[-1] + 1)) and steps[-1] >= 24  # no step missing either


def test_a_resumed_runs_csv_goes_on_in_the_same_file(tmp_path):
    """Lightning's CSVLogger deletes the metrics.csv it finds: a resumed run lost its first start's points."""
    import csv

    from sentence_lab.runs.loggers import ContinuedCSVLogger

    first = ContinuedCSVLogger(save_dir=str(tmp_path), name="csv", version="")
    first.log_metrics({"train/loss_step": 3.0, "epoch": 0}, step=0)
    first.log_metrics({"train/loss_step": 2.0, "epoch": 0}, step=1)
    first.save()
    resumed = ContinuedCSVLogger(save_dir=str(tmp_path), name="csv", version="")
    resumed.log_metrics({"train/loss_step": 1.5, "epoch": 1}, step=2)
    resumed.log_metrics({"probing/Length": 60.0}, step=1)  # a column the first start never had
    resumed.save()
    with open(tmp_path / "csv" / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["step"], r["train/loss_step"], r["probing/Length"]) for r in rows] == [
        ("0", "3.0", ""), ("1", "2.0", ""), ("2", "1.5", ""), ("1", "", "60.0")]
