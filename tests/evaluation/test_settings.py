"""SuiteSettings: evaluate.py's config and the per-epoch callback's config read by one function, each setting in one
form, a task typo refused before any data is read."""
from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from sentence_lab.evaluation.protocol import PROTOTYPE
from sentence_lab.evaluation.settings import SuiteSettings
from sentence_lab.evaluation.suite import EvaluationSuite
from sentence_lab.home import CONF
from sentence_lab.tasks import GROUPS, UnknownTask
from sentence_lab.training.eval_suite import EvalSuiteCallback


def _compose(config: str, overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(config_name=config, overrides=overrides)


def test_evaluate_and_the_callback_read_the_same_settings_alike(tmp_path):
    asked = ["tasks=[Length,sts]", "probing=xprobe", "sides=[fr]", "side_probing=generated",
             "retrieval_held_out=500", "evaluation.encode_batch_size=64", "evaluation.layers=true",
             "evaluation.kfold=3"]
    evaluate_cfg = _compose("evaluate", asked)
    train_cfg = _compose("train", [f"callbacks.eval_suite.{a.replace('evaluation.', 'params.')}" for a in asked] +
                         [f"paths.output_dir={tmp_path}", "callbacks.eval_suite.retrieval_path=null"])
    from_evaluate = SuiteSettings.from_config(evaluate_cfg, evaluate_cfg.evaluation)
    callback = instantiate(train_cfg.callbacks.eval_suite)
    assert isinstance(callback, EvalSuiteCallback) and callback.settings == from_evaluate
    assert from_evaluate.tasks == ("Length", *GROUPS["sts"])
    assert (from_evaluate.probing, from_evaluate.sides, from_evaluate.side_probing) == ("xprobe", ("fr",), "generated")
    assert (from_evaluate.encode_batch_size, from_evaluate.layers, from_evaluate.params.kfold) == (64, True, 3)
    assert from_evaluate.retrieval_held_out == 500


@pytest.mark.parametrize(("given", "taken"), [(None, "none"), (False, "none"), ("auto", "auto"), ("fr", "fr"),
                                              (["fr", "de"], ("fr", "de")), (OmegaConf.create(["fr"]), ("fr",))])
def test_sides_take_one_form(given, taken):
    assert SuiteSettings.from_config({"tasks": "Length", "sides": given}, {}).sides == taken


def test_defaults_and_empty_values_are_the_suites_defaults():
    settings = SuiteSettings.from_config({"tasks": "MR", "probing": None, "side_probing": ""}, None)
    assert settings == SuiteSettings(tasks=("MR",), params=settings.params)
    assert settings.params == PROTOTYPE.__class__()  # no protocol group: the dataclass's own defaults


def test_a_retrieval_path_without_pairs_held_out_of_it_is_not_taken():
    given = {"tasks": "Length", "retrieval_path": "corpus/en-fr.tsv"}
    assert SuiteSettings.from_config(given, {}).retrieval_path is None
    held = SuiteSettings.from_config({**given, "retrieval_held_out": 1000}, {})
    assert (held.retrieval_held_out, held.retrieval_path) == (1000, "corpus/en-fr.tsv")


def test_an_unknown_task_is_refused_before_any_data_is_read(tmp_path):
    with pytest.raises(UnknownTask, match="Bogus"):
        EvaluationSuite.from_config({"tasks": ["Length", "Bogus"]}, {}, tmp_path / "nowhere")


def test_a_suite_from_a_config_loads_the_resolved_tasks_once(senteval_root, monkeypatch):
    import sentence_lab.evaluation.suite as suite_module

    loads = []
    real = suite_module.load_named_tasks
    monkeypatch.setattr(suite_module, "load_named_tasks", lambda names, *a, **k: loads.append(names) or
                        real(names, *a, **k))
    suite = EvaluationSuite.from_config({"tasks": "mr,STS13"}, {"kfold": 2}, senteval_root)
    assert loads == [["MR", "STS13"]] and suite.task_names == ["MR", "STS13"] and suite.params.kfold == 2
