"""logger=mlflow and logger=wandb (offline): the per-epoch suite's scores and the final and best scores reach each,
read back from what the tracker wrote (issue 32)."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tests.helpers.extras import missing_extra
from tests.helpers.train_config import compose_train_cfg
from tests.helpers.wandb_log import config, history, record_kinds

pytestmark = pytest.mark.slow  # end-to-end: outside the fast tier (-m "not slow")


def _run(tiny_corpus: Path, senteval_root: Path, out: Path, loggers: str) -> list[float]:
    """Two epochs with the suite on Length; the per-epoch scores the suite wrote (epochs 0, 1, 2)."""
    from sentence_lab.runs.run import train

    cfg = compose_train_cfg(tiny_corpus, out, [
        "encoder=bow", "encoder.embed_dim=16", "encoder.embedding_init=random", "trainer.val_check_interval=1.0",
        "trainer.max_epochs=2", f"logger={loggers}", "~callbacks.rich_progress_bar", "~callbacks.model_summary",
        "callbacks.eval_suite.tasks=[Length]", f"callbacks.eval_suite.data_dir={senteval_root}",
        "callbacks.eval_suite.params.l2_grid=[1e-3]", "callbacks.eval_suite.params.max_epoch=6"])
    train(cfg)
    return [json.loads((out / "eval" / f"epoch_{e:03d}.json").read_text())["results"]["Length"]["main_score"]
            for e in (0, 1, 2)]


def mlflow_run(store: Path):
    """The one run of the run directory's MLflow store, and a client on that store."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{store}")
    (run,) = client.search_runs([e.experiment_id for e in client.search_experiments()])
    return client, run


def mlflow_metric(store: Path, key: str) -> list[tuple[int, float]]:
    """(step, value) of one metric, in logging order."""
    client, run = mlflow_run(store)
    return [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)]


def test_a_resumed_run_logs_into_the_mlflow_run_its_first_start_opened(tiny_corpus, senteval_root, tmp_path):
    """Lightning's MLFlowLogger opens a new MLflow run at every start: a resumed run's curve was split in two."""
    if missing_extra("mlflow"):
        pytest.skip(missing_extra("mlflow"))
    from sentence_lab.runs.loggers import ContinuedMLFlowLogger

    store = tmp_path / "mlflow.db"
    settings = {"run_dir": str(tmp_path), "experiment_name": "train", "tracking_uri": f"sqlite:///{store}"}
    first = ContinuedMLFlowLogger(**settings)
    first.log_metrics({"train/loss_step": 3.0}, step=0)
    first.finalize("failed")  # as a stop leaves it
    other = ContinuedMLFlowLogger(**dict(settings, run_dir=str(tmp_path / "another")))  # another run's: its own
    other.log_metrics({"train/loss_step": 9.0}, step=0)
    resumed = ContinuedMLFlowLogger(**settings)
    resumed.log_metrics({"train/loss_step": 2.0}, step=1)
    resumed.finalize("success")
    assert resumed.run_id == first.run_id != other.run_id
    history = resumed.experiment.get_metric_history(first.run_id, "train/loss_step")
    assert [(m.step, m.value) for m in history] == [(0, 3.0), (1, 2.0)]


def wandb_log(run_dir: Path) -> Path:
    """The ``.wandb`` log of the run directory's one offline W&B run."""
    (log,) = run_dir.glob("wandb/offline-run-*/run-*.wandb")
    return log


def test_mlflow_holds_the_curves_and_the_final_and_best_scores(tiny_corpus, senteval_root, tmp_path):
    if missing_extra("mlflow"):
        pytest.skip(missing_extra("mlflow"))
    scores = _run(tiny_corpus, senteval_root, tmp_path / "run", "mlflow")
    store = tmp_path / "run" / "mlflow.db"
    assert mlflow_metric(store, "probing/Length") == [(e, pytest.approx(s)) for e, s in enumerate(scores)]
    assert mlflow_metric(store, "hparams/final/Length") == [(2, pytest.approx(scores[2]))]
    assert mlflow_metric(store, "hparams/best/Length") == [(2, pytest.approx(max(scores)))]
    assert len(mlflow_metric(store, "train/loss_step")) >= 2
    assert mlflow_run(store)[1].data.params["objective_name"] == "qt"


def test_wandb_offline_holds_the_curves_and_the_final_and_best_scores(tiny_corpus, senteval_root, tmp_path,
                                                                      monkeypatch, caplog):
    if missing_extra("wandb"):
        pytest.skip(missing_extra("wandb"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    with caplog.at_level(logging.ERROR, logger="sentence_lab"):
        scores = _run(tiny_corpus, senteval_root, tmp_path / "run", "wandb")
    assert not [r.getMessage() for r in caplog.records if "logging to" in r.getMessage()]
    log = wandb_log(tmp_path / "run")
    rows = history(log)
    curve = [row["probing/Length"] for row in rows if "probing/Length" in row]
    assert curve == pytest.approx(scores), f"history rows {rows}; records {record_kinds(log)}; {log.stat().st_size} B"
    finals = [row for row in rows if "hparams/final/Length" in row]
    assert [row["hparams/final/Length"] for row in finals] == [pytest.approx(scores[2])]
    assert [row["hparams/best/Length"] for row in finals] == [pytest.approx(max(scores))]
    assert config(wandb_log(tmp_path / "run"))["objective_name"] == "qt"
