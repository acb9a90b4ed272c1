"""TrialPruning (sentence_lab.runs.trial_pruning): a run reports to its Optuna trial and stops when pruned."""
from __future__ import annotations

from types import SimpleNamespace

import optuna
import pytest

from sentence_lab.optuna_storage import PRUNED_AT, open_storage, storage_url
from sentence_lab.runs.trial_pruning import TrialPruning


def trainer(**metrics: float) -> SimpleNamespace:
    """What the callback reads of a one-process Lightning trainer."""
    return SimpleNamespace(is_global_zero=True, world_size=1, callback_metrics=metrics, loggers=[],
                           should_stop=False, sanity_checking=False, fast_dev_run=False, callbacks=[])


@pytest.fixture
def study_with_three_curves(tmp_path):
    """Three finished trials whose probing mean after epoch 1 was 60, 62 and 64 (median 62)."""
    url = storage_url(None, tmp_path)
    study = optuna.create_study(storage=open_storage(url), study_name="s", direction="maximize")
    for final in (60.0, 62.0, 64.0):
        trial = study.ask()
        trial.report(50.0, 0)
        trial.report(final, 1)
        study.tell(trial, final)
    return url, study


@pytest.mark.parametrize(("score", "pruned"), [(55.0, True), (63.0, False)])
def test_a_trial_below_the_median_after_its_epoch_is_stopped_and_marked(study_with_three_curves, score, pruned):
    url, study = study_with_three_curves
    trial = study.ask()
    callback = TrialPruning(url, "s", trial._trial_id, "probing/mean",
                            optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=1))
    run = trainer()
    callback.setup(run, None, "fit")
    callback.after_evaluation(run, 0, {"probing/mean": 50.0, "probing/Length": 40.0})  # epoch 0: warm-up
    assert run.should_stop is False
    logged: list[tuple[dict, int]] = []
    run.loggers = [SimpleNamespace(log_metrics=lambda metrics, step: logged.append((metrics, step)))]
    callback.after_evaluation(run, 1, {"probing/mean": score})
    assert run.should_stop is pruned and callback.pruned_at == (1 if pruned else None)
    assert logged == ([({"optuna/pruned_at_epoch": 1.0}, 1)] if pruned else [])  # TensorBoard marks it
    frozen = study._storage.get_trial(trial._trial_id)
    assert frozen.intermediate_values == {0: 50.0, 1: score}
    assert (PRUNED_AT in frozen.user_attrs) is pruned


def test_without_the_suite_a_logged_metric_is_reported_after_each_validation(study_with_three_curves):
    url, study = study_with_three_curves
    trial = study.ask()
    callback = TrialPruning(url, "s", trial._trial_id, "val/context_acc",
                            optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=1))
    run = trainer(**{"val/context_acc": 0.25})
    run.current_epoch = 0
    callback.setup(run, None, "fit")
    callback.on_validation_end(run, None)
    assert study._storage.get_trial(trial._trial_id).intermediate_values == {1: 0.25}
    assert run.should_stop is True and callback.pruned_at == 1  # 0.25 after epoch 1: far below the others' 62


def test_a_storage_that_fails_on_rank_zero_is_logged_and_the_run_goes_on(study_with_three_curves, caplog):
    url, study = study_with_three_curves
    trial = study.ask()
    callback = TrialPruning(url, "s", trial._trial_id, "probing/mean", optuna.pruners.MedianPruner())
    run = trainer()
    callback.setup(run, None, "fit")
    study.tell(trial, 1.0)  # finished elsewhere: reporting to it raises
    callback.after_evaluation(run, 1, {"probing/mean": 10.0})
    assert run.should_stop is False and "reporting probing/mean after epoch 1 failed" in caplog.text
