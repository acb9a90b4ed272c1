"""EvalSuiteCallback: per-epoch SentEval scores in TensorBoard and JSON, on fixture tasks and a tiny corpus."""
from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

import sentence_lab.evaluation.suite as suite_module
from sentence_lab.evaluation.results import ResultsWriter, read_items, read_results
from sentence_lab.evaluation.runner import load_named_tasks, load_tasks, params_from_config, run_tasks
from sentence_lab.tasks import UnknownTask
from sentence_lab.text import Tokenizer, Vocab
from sentence_lab.training import inference
from sentence_lab.training.eval_suite import EvalSuiteCallback, amnesic_metrics, side_metrics, subsample, task_tag
from sentence_lab.training.untrained import untrained_model
from tests.helpers.train_config import compose_train_cfg

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
FAST = {"name": "prototype", "l2_grid": [1e-3], "max_epoch": 6, "seed": 1111, "device": "cpu"}


def _train_cfg(tiny_corpus: Path, out: Path, overrides: list[str]):
    return compose_train_cfg(tiny_corpus, out, ["encoder=bow", "encoder.embed_dim=16", "encoder.embedding_init=random",
                                               "trainer.val_check_interval=1.0", *overrides])


@pytest.mark.slow
def test_two_epochs_write_json_and_tensorboard_curves(tiny_corpus, senteval_root, tmp_path, monkeypatch):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from sentence_lab.runs.run import fit

    loads = []
    monkeypatch.setattr(suite_module, "load_named_tasks",
                        lambda *a, **k: loads.append(a) or load_named_tasks(*a, **k))
    cfg = _train_cfg(tiny_corpus, tmp_path / "run", [
        "trainer.max_epochs=2", "logger=tensorboard",
        "~callbacks.rich_progress_bar", "~callbacks.model_summary",
        "callbacks.eval_suite.tasks=[Length,WordContent,TopConstituents]",  # no TopConstituents in the fixtures
        f"callbacks.eval_suite.data_dir={senteval_root}",
        "callbacks.eval_suite.params.l2_grid=[1e-3]", "callbacks.eval_suite.params.max_epoch=6"])
    trainer, model = fit(cfg)
    assert trainer.state.finished and trainer.current_epoch == 2
    assert len(loads) == 1  # task data read once, at setup
    # The evaluation leaves training alone: the same weights as a run without the callback.
    _, plain = fit(_train_cfg(tiny_corpus, tmp_path / "plain", ["trainer.max_epochs=2", "logger=none",
                                                                "callbacks=none"]))
    for key, value in plain.state_dict().items():
        assert torch.equal(value, model.state_dict()[key]), key

    out = tmp_path / "run" / "eval"
    # epoch 0 = before the first step (the untrained model), then after each of the 2 epochs
    assert sorted(p.name for p in out.iterdir()) == [f"epoch_{e:03d}.{x}" for e in (0, 1, 2)
                                                     for x in ("items.npz", "json", "md")]
    docs = [json.loads((out / f"epoch_{e:03d}.json").read_text()) for e in (0, 1, 2)]
    for epoch, doc in enumerate(docs):
        assert set(doc["results"]) == {"Length", "WordContent"}
        assert "TopConstituents" in doc["skipped"] and not doc["errors"]
        assert doc["epoch"] == epoch and doc["encoder"]["epoch"] == epoch
        assert doc["kind"] == "epoch" and doc == read_results(out / f"epoch_{epoch:03d}.json")
        assert doc["items_file"] == f"epoch_{epoch:03d}.items.npz"  # each task's predictions, item by item
        assert set(read_items(out / doc["items_file"])) == {"Length", "WordContent"}
        assert doc["protocol"]["name"] == "prototype" and doc["protocol"]["l2_grid"] == [1e-3]
        assert doc["protocol"]["max_examples_per_split"] is None and "subsample" not in doc
        assert doc["eval_seconds"] > 0 and (epoch == 0) == ("eval_share_of_epoch" not in doc)
        assert 0 <= doc["results"]["Length"]["main_score"] <= 100
        # Evaluated with vocabulary expansion fit on that epoch's weights (f and g: two tables)...
        expansion = doc["encoder"]["vocabulary_expansion"]
        assert expansion["added_words"] > 390_000 and len(expansion["shared_words"]) == 2
    # ...and removed afterwards.
    assert model.encode_vocab is model.vocab and model.expansion is None
    assert (docs[0]["encoder"]["global_step"] == 0
            and docs[2]["encoder"]["global_step"] > docs[1]["encoder"]["global_step"])
    assert "| Length |" in (out / "epoch_001.md").read_text()

    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"probing/Length", "probing/WordContent"} <= tags and "probing/TopConstituents" not in tags
    for task in ("Length", "WordContent"):
        scalars = events.Scalars(f"probing/{task}")
        assert [s.step for s in scalars] == [0, 1, 2]
        np.testing.assert_allclose([s.value for s in scalars], [d["results"][task]["main_score"] for d in docs],
                                   rtol=1e-6)
        # The HParams tab: the final and the best score of each task.
        assert events.Scalars(f"hparams/final/{task}")[-1].value == pytest.approx(
            docs[2]["results"][task]["main_score"])
        assert events.Scalars(f"hparams/best/{task}")[-1].value == pytest.approx(
            max(d["results"][task]["main_score"] for d in docs))


class _Model(torch.nn.Module):
    """A stand-in LightningModule: ``encode`` from the fixture's HashEncoder, a dropout to see the mode."""

    def __init__(self, encoder) -> None:
        super().__init__()
        self.dropout = torch.nn.Dropout(0.5)
        self.encoder = encoder
        self.modes: list[bool] = []

    def encode(self, sentences):
        self.modes.append(self.training)
        return self.encoder.encode(sentences)


def _trainer(tmp_path: Path, epoch: int = 0):
    logger: SimpleNamespace = SimpleNamespace(
        metrics=[], hparams=[], log_metrics=lambda m, step: logger.metrics.append((step, m)),
        log_hyperparams=lambda p, metrics=None: logger.hparams.append((p, metrics)))
    return SimpleNamespace(current_epoch=epoch, global_step=10 * (epoch + 1), sanity_checking=False,
                           fast_dev_run=False, is_global_zero=True, world_size=1, loggers=[logger],
                           default_root_dir=str(tmp_path),
                           strategy=SimpleNamespace(broadcast=lambda obj, src=0: obj))  # one process


def test_construction_reads_no_data_and_rejects_unknown_tasks(tmp_path):
    cb = EvalSuiteCallback(data_dir=tmp_path / "nowhere", params=FAST)
    assert cb._loaded is None and len(cb.settings.tasks) == 10
    with pytest.raises(UnknownTask):
        EvalSuiteCallback(tasks=["Length", "Bogus"])
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("train")  # on by default
    assert isinstance(instantiate(cfg.callbacks.eval_suite, data_dir=str(tmp_path / "nowhere"),
                                  output_dir=str(tmp_path)), EvalSuiteCallback)


@pytest.mark.slow
def test_scores_match_the_runner_every_time_and_state_is_restored(senteval_root, hash_encoder, tmp_path):
    cb = EvalSuiteCallback(tasks=["Length", "MR", "STS13"], data_dir=senteval_root, params=FAST,
                          output_dir=tmp_path / "se")
    model = _Model(hash_encoder).train()
    trainer = _trainer(tmp_path)
    cb.setup(trainer, model, "fit")
    torch.manual_seed(5)
    expected_rng = torch.get_rng_state()
    cb.on_train_epoch_end(trainer, model)
    trainer.current_epoch = 1
    cb.on_train_epoch_end(trainer, model)
    assert model.training and model.dropout.training and model.modes and not any(model.modes)
    assert torch.equal(torch.get_rng_state(), expected_rng)  # the probes' seeding does not touch training's RNG
    # The same scores at both epochs (same encoder: the loaded data is reused intact) as evaluate.py's runner.
    fresh = run_tasks(load_tasks(["Length", "MR", "STS13"], senteval_root), hash_encoder, params_from_config(FAST),
                      ResultsWriter(tmp_path / "fresh.json", {}))
    want = {t: r["main_score"] for t, r in fresh["results"].items()}
    assert cb.history == {1: want, 2: want}  # after 1 and 2 epochs of training
    logged = trainer.loggers[0].metrics
    assert [step for step, _ in logged] == [1, 2]
    families = {"Length": "probing", "MR": "transfer", "STS13": "similarity"}
    assert logged[0][1] == {f"{families[t]}/{t}": pytest.approx(s) for t, s in want.items()}


def test_the_tasks_are_tokenised_once_a_fit_and_forgotten_at_teardown(senteval_root, tmp_path, monkeypatch):
    encoder = {"_target_": "sentence_lab.encoders.bilstm.BiLSTMMaxEncoder", "embed_dim": 8, "hidden_dim": 8,
               "embedding_init": "random"}
    model = untrained_model(encoder, Vocab.build(Counter({"the": 3, "a": 2})), Tokenizer("moses", True))
    cb = EvalSuiteCallback(tasks=["STS13", "TREC"], data_dir=senteval_root, params=FAST, output_dir=tmp_path,
                           vocab_expansion=False)
    trainer = _trainer(tmp_path)
    cb.setup(trainer, model, "fit")
    tokenised: Counter = Counter()
    real = Tokenizer.__call__
    monkeypatch.setattr(Tokenizer, "__call__", lambda self, s: tokenised.update([s]) or real(self, s))
    monkeypatch.setattr(inference, "_cached_tokens", lambda tokenizer, s: tuple(tokenizer(s)))  # no LRU to hide it
    cb.evaluate(trainer, model, 0)
    cb.on_train_epoch_end(trainer, model)
    assert sorted(cb.history) == [0, 1] and cb.history[0] == cb.history[1]  # the same model: the same scores
    assert tokenised and set(tokenised.values()) == {1}  # every task sentence once over both evaluations
    cb.teardown(trainer, model, "fit")
    sentence = next(iter(tokenised))
    model.token_ids(sentence)
    assert tokenised[sentence] == 2  # forgotten with the fit


def test_every_n_epochs(senteval_root, hash_encoder, tmp_path):
    cb = EvalSuiteCallback(tasks="STS13", data_dir=senteval_root, params=FAST, output_dir=tmp_path, every_n_epochs=2)
    model, trainer = _Model(hash_encoder), _trainer(tmp_path)
    for epoch in range(4):
        trainer.current_epoch = epoch
        cb.on_train_epoch_end(trainer, model)
    assert sorted(cb.history) == [2, 4]
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["epoch_002.json", "epoch_004.json"]


def test_a_failing_encoder_or_task_never_stops_training(senteval_root, hash_encoder, tmp_path, caplog):
    class Broken:
        def encode(self, sentences):
            return np.full((len(sentences), 4), np.nan, dtype=np.float32)

    cb = EvalSuiteCallback(tasks=["Length", "MR"], data_dir=senteval_root, params=FAST, output_dir=tmp_path)
    model, trainer = _Model(Broken()), _trainer(tmp_path)
    cb.on_train_epoch_end(trainer, model)  # NaN embeddings: each task recorded as failed, no exception
    doc = json.loads((tmp_path / "epoch_001.json").read_text())
    assert set(doc["errors"]) == {"Length", "MR"} and not doc["results"]
    assert "NaN/inf" in doc["errors"]["Length"]
    assert trainer.loggers[0].metrics == []

    cb._loaded[1].data.splits["all"].y = cb._loaded[1].data.splits["all"].y[:3]  # MR now broken: an error
    cb.on_train_epoch_end(trainer, _Model(hash_encoder))
    doc = json.loads((tmp_path / "epoch_001.json").read_text())
    assert set(doc["results"]) == {"Length"} and "MR" in doc["errors"]


def test_subsampling_is_recorded(senteval_root, hash_encoder, tmp_path):
    cb = EvalSuiteCallback(tasks=["Length", "MR"], data_dir=senteval_root, params=FAST, output_dir=tmp_path,
                          max_examples_per_split=30)
    cb.on_train_epoch_end(_trainer(tmp_path), _Model(hash_encoder))
    doc = json.loads((tmp_path / "epoch_001.json").read_text())
    assert doc["protocol"]["max_examples_per_split"] == 30 and "not SentEval's protocol" in doc["subsample"]["note"]
    assert doc["results"]["MR"]["n"] == 30 and doc["results"]["MR"]["subsampled"] == {"all": "30 of 80"}
    assert doc["results"]["Length"]["subsampled"]["train"].startswith("30 of ")


def test_a_cap_per_split_leaves_the_splits_it_does_not_name_whole(senteval_root, hash_encoder, tmp_path):
    cb = EvalSuiteCallback(tasks=["Length", "MR"], data_dir=senteval_root, params=FAST, output_dir=tmp_path,
                          max_examples_per_split={"train": 30, "dev": None})
    cb.on_train_epoch_end(_trainer(tmp_path), _Model(hash_encoder))
    doc = json.loads((tmp_path / "epoch_001.json").read_text())
    whole = load_tasks(["Length"], senteval_root)[0].data
    assert doc["protocol"]["max_examples_per_split"] == {"train": 30, "dev": None}
    assert doc["results"]["Length"]["subsampled"] == {"train": f"30 of {len(whole.splits['train'])}"}
    assert doc["results"]["Length"]["ntest"] == len(whole.splits["test"])
    assert "subsampled" not in doc["results"]["MR"]  # its one split is "all", not named
    with pytest.raises(ValueError, match="no split named valid; the splits are train, dev, test, all"):
        EvalSuiteCallback(max_examples_per_split={"valid": 10})
    with pytest.raises(ValueError, match="must be >= 1"):
        EvalSuiteCallback(max_examples_per_split={"train": 0})


def test_a_split_capped_alike_is_cut_alike_whatever_the_other_caps(senteval_root):
    data = load_tasks(["Length"], senteval_root)[0].data
    one, per_split = subsample(data, 20, 1111), subsample(data, {"train": 20}, 1111)
    assert one.splits["train"].a == per_split.splits["train"].a
    assert len(one.splits["test"]) == 20 and per_split.splits["test"] is data.splits["test"]


def test_epoch_zero_before_training_but_not_on_resume_nor_under_fast_dev_run(senteval_root, hash_encoder, tmp_path):
    cb = EvalSuiteCallback(tasks="STS13", data_dir=senteval_root, params=FAST, output_dir=tmp_path)
    model, trainer = _Model(hash_encoder), _trainer(tmp_path)
    trainer.global_step = 0
    cb.on_train_start(trainer, model)
    assert sorted(cb.history) == [0] and (tmp_path / "epoch_000.json").is_file()
    resumed = EvalSuiteCallback(tasks="STS13", data_dir=senteval_root, params=FAST, output_dir=tmp_path / "r")
    trainer.global_step = 50
    resumed.on_train_start(trainer, model)
    assert resumed.history == {}
    quick = EvalSuiteCallback(tasks="STS13", data_dir=senteval_root, params=FAST, output_dir=tmp_path / "q")
    trainer.global_step, trainer.fast_dev_run = 0, True
    quick.on_train_start(trainer, model)
    quick.on_train_epoch_end(trainer, model)
    assert quick.history == {} and not (tmp_path / "q").exists()


def test_time_budget_skips_the_remaining_tasks_and_says_so(senteval_root, hash_encoder, tmp_path):
    cb = EvalSuiteCallback(tasks=["Length", "MR"], data_dir=senteval_root, params=FAST, output_dir=tmp_path,
                          time_budget_s=0.0)
    cb.on_train_epoch_end(_trainer(tmp_path), _Model(hash_encoder))
    doc = json.loads((tmp_path / "epoch_001.json").read_text())
    assert not doc["results"] and "time budget of 0 s" in doc["skipped"]["MR"]
    assert doc["time_budget"] == {"seconds": 0.0, "cut": True}


def test_fit_end_sends_final_and_best_scores_with_the_hyperparameters(senteval_root, hash_encoder, tmp_path):
    cb = EvalSuiteCallback(tasks=["STS13"], data_dir=senteval_root, params=FAST, output_dir=tmp_path)
    cb.history = {0: {"STS13": 0.2}, 1: {"STS13": 0.5}, 2: {"STS13": 0.4}}
    model, trainer = _Model(hash_encoder), _trainer(tmp_path)
    model.hparams = {"encoder": {"_target_": "x"}}
    cb.on_fit_end(trainer, model)
    # a logger other than TensorBoard's: the settings, then the scores as scalars at the last evaluated epoch
    params, metrics = trainer.loggers[0].hparams[0]
    assert params == {"encoder": {"_target_": "x"}} and metrics is None
    assert trainer.loggers[0].metrics == [(2, {"hparams/final/STS13": 0.4, "hparams/best/STS13": 0.5})]


def test_no_task_data_at_all_is_said_once_and_training_goes_on(hash_encoder, tmp_path, caplog):
    cb = EvalSuiteCallback(tasks=["Length", "MR"], data_dir=tmp_path / "nowhere", params=FAST,
                          output_dir=tmp_path / "e", probing="senteval")
    trainer, model = _trainer(tmp_path), _Model(hash_encoder)
    cb.setup(trainer, model, "fit")
    trainer.global_step = 0
    cb.on_train_start(trainer, model)
    cb.on_train_epoch_end(trainer, model)
    said = [r.getMessage() for r in caplog.records if "no task data" in r.getMessage()]
    assert len(said) == 1 and "SENTENCE_DATA" in said[0]
    assert cb.history == {} and not (tmp_path / "e").exists()


def test_a_fresh_machine_gets_the_shipped_probing_set(hash_encoder, tmp_path):
    """No data root at all: the probing tasks come from assets/probing/books-en, the others stay missing."""
    cb = EvalSuiteCallback(tasks=["Length", "MR"], data_dir=tmp_path / "nowhere", params=FAST, output_dir=tmp_path)
    cb.setup(_trainer(tmp_path), _Model(hash_encoder), "fit")
    length, mr = cb._loaded
    assert length.data is not None and length.data.info["layout"] == "generated"
    assert "books-en" in length.data.info["probing_set"] and length.data.nclasses == 6
    assert mr.missing


@pytest.mark.slow
def test_logger_many_gets_the_curves_and_final_and_best_scores_into_csv_and_tensorboard(tiny_corpus, senteval_root,
                                                                                       tmp_path):
    """logger=many (TensorBoard and CSV): each per-epoch score and the final and best scores, read back from the
    CSV the logger wrote; report.py's curves come from that CSV where a run has no TensorBoard events."""
    from sentence_lab.reporting.runs import read_csv_scalars, read_scalars
    from sentence_lab.runs.run import fit

    cfg = _train_cfg(tiny_corpus, tmp_path / "run", [
        "trainer.max_epochs=2", "logger=many", "~callbacks.rich_progress_bar", "~callbacks.model_summary",
        "callbacks.eval_suite.tasks=[Length]", f"callbacks.eval_suite.data_dir={senteval_root}",
        "callbacks.eval_suite.params.l2_grid=[1e-3]", "callbacks.eval_suite.params.max_epoch=6"])
    fit(cfg)
    docs = [json.loads((tmp_path / "run" / "eval" / f"epoch_{e:03d}.json").read_text()) for e in (0, 1, 2)]
    scores = [doc["results"]["Length"]["main_score"] for doc in docs]
    logged = read_csv_scalars(tmp_path / "run")
    assert [step for step, _ in logged["probing/Length"]] == [0, 1, 2]
    assert [value for _, value in logged["probing/Length"]] == pytest.approx(scores)
    assert logged["hparams/final/Length"] == [(2, pytest.approx(scores[2]))]
    assert logged["hparams/best/Length"] == [(2, pytest.approx(max(scores)))]
    assert len(logged["train/loss_step"]) >= 2
    shutil.rmtree(tmp_path / "run" / "tensorboard")  # a run that logged to CSV only
    assert read_scalars(tmp_path / "run")["train/loss_step"] == logged["train/loss_step"]


def test_a_tasks_logged_name_is_its_family_then_its_name():
    """One name per idea: the TensorBoard families are the registry's families (``sts`` is a task group)."""
    assert [task_tag(t) for t in ("STS14", "STSBenchmark", "MR", "Length", "NotATask")] == [
        "similarity/STS14", "relatedness/STSBenchmark", "transfer/MR", "probing/Length", "eval/NotATask"]


def test_a_presets_scores_are_marked_in_the_json_the_tags_and_the_final_scores(senteval_root, hash_encoder, tmp_path):
    cb = EvalSuiteCallback(tasks=["Length", "MR"], data_dir=senteval_root, params=FAST, output_dir=tmp_path,
                          max_examples_per_split=30, preset="curves")
    trainer = _trainer(tmp_path)
    cb.on_train_epoch_end(trainer, _Model(hash_encoder))
    doc = json.loads((tmp_path / "epoch_001.json").read_text())
    assert doc["preset"]["name"] == "curves" and "not SentEval's protocol" in doc["preset"]["note"]
    assert doc["protocol"]["preset"] == "curves" and doc["protocol"]["standard"] == "preset curves, not SentEval's"
    step, logged = trainer.loggers[0].metrics[0]
    assert step == 1 and set(logged) == {"probing_curves/Length", "transfer_curves/MR"}
    cb.on_fit_end(trainer, _Model(hash_encoder))
    assert set(trainer.loggers[0].metrics[-1][1]) == {"hparams/final_curves/Length", "hparams/best_curves/Length",
                                                      "hparams/final_curves/MR", "hparams/best_curves/MR"}
    assert cb.scores_at(1).keys() >= {"probing/Length", "transfer/MR"}  # what a sweep optimises keeps its name
    with pytest.raises(ValueError, match="a preset's name is a word"):
        EvalSuiteCallback(preset="my preset")


def test_the_full_suite_and_the_curve_preset_are_options_of_one_config_group(tmp_path):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        full = compose("train").callbacks.eval_suite
        curves = compose("train", overrides=["callbacks/eval_suite=curves"]).callbacks.eval_suite
        listed = compose("train", overrides=["callbacks=[default,epoch_checkpoints]", "callbacks/eval_suite=curves",
                                             "evaluation@callbacks.eval_suite.params=full"]).callbacks
        off = compose("train", overrides=["~callbacks.eval_suite"]).callbacks
    assert full.preset is None and full.max_examples_per_split is None and full.params.name == "prototype"
    assert full.tasks == ["probing", "similarity", "CR", "TREC"]
    assert curves.preset == "curves" and curves.max_examples_per_split is None and curves.params == full.params
    assert curves.tasks == ["Length", "Depth", "OddManOut", "similarity", "TREC"]
    assert listed.eval_suite.preset == "curves" and listed.eval_suite.params.name == "full"
    assert "epoch_checkpoint" in listed and "eval_suite" not in off
    made = instantiate(curves, data_dir=str(tmp_path), output_dir=str(tmp_path))
    assert isinstance(made, EvalSuiteCallback) and made.preset == "curves" and made.max_examples_per_split is None


@pytest.mark.slow
def test_the_curve_preset_scores_each_task_it_keeps_as_the_full_suite_does(senteval_root, hash_encoder, tmp_path):
    """Its agreement with the full protocol rests on this: a kept task's score is the full protocol's, bit for bit."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        configs = {name: compose("train", overrides=[f"callbacks/eval_suite={name}"]).callbacks.eval_suite
                   for name in ("full", "curves")}
    docs = {}
    for name, cfg in configs.items():
        cb = instantiate(cfg, data_dir=str(senteval_root), output_dir=str(tmp_path / name), params=FAST,
                         vocab_expansion=False)
        cb.on_train_epoch_end(_trainer(tmp_path / name), _Model(hash_encoder))
        docs[name] = json.loads((tmp_path / name / "epoch_001.json").read_text())
    kept = docs["curves"]["results"]
    assert set(kept) == {"Length", "Depth", "OddManOut", "STS12", "STS13", "STS14", "STS15", "STS16", "TREC"}
    assert {t: r["main_score"] for t, r in kept.items()} == {t: docs["full"]["results"][t]["main_score"] for t in kept}
    assert len(docs["full"]["results"]) > len(kept) and docs["curves"]["preset"]["name"] == "curves"


def test_a_second_languages_scores_are_logged_under_its_name():
    doc = {"results": {"Length": {"main_score": 50.0}},
           "sides": {"fr": {"results": {"Length": {"main_score": 40.0}, "Tatoeba": {
               "main_score": 12.5, "error": {"cosine": {"en->fr": 20.0, "fr->en": 30.0},
                                             "margin": {"en->fr": 10.0, "fr->en": 15.0}}}}}}}
    assert side_metrics(doc, task_tag) == {
        "fr/probing/Length": 40.0, "fr/retrieval/Tatoeba": 12.5, "fr/retrieval/Tatoeba/cosine_en-fr": 20.0,
        "fr/retrieval/Tatoeba/cosine_fr-en": 30.0, "fr/retrieval/Tatoeba/margin_en-fr": 10.0,
        "fr/retrieval/Tatoeba/margin_fr-en": 15.0}


@pytest.mark.slow
def test_a_jbi_run_curves_both_languages_and_retrieves_the_pairs_it_held_out(tiny_corpus, tiny_pairs, senteval_root,
                                                                            tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from sentence_lab.runs.run import fit
    from tests.helpers.train_config import compose_objective_cfg

    cfg = compose_objective_cfg("jbi", tiny_corpus, tiny_pairs, tmp_path / "run", [
        "data.target_tokenizer.lang=fr", "objective.k=3", "encoder.embed_dim=16", "trainer.max_epochs=1",
        "logger=tensorboard",
        "~callbacks.rich_progress_bar", "~callbacks.model_summary", "callbacks.eval_suite.tasks=[Length]",
        f"callbacks.eval_suite.data_dir={senteval_root}", "callbacks.eval_suite.params.l2_grid=[1e-3]",
        "callbacks.eval_suite.params.max_epoch=6"])
    trainer, model = fit(cfg)
    assert trainer.state.finished and model.languages == ("en", "fr")
    docs = [read_results(tmp_path / "run" / "eval" / f"epoch_{e:03d}.json") for e in (0, 1)]
    for doc in docs:
        side = doc["sides"]["fr"]
        assert set(doc["results"]) == {"Length"} and side["encoder"]["language"] == "fr"
        assert "Length" in side["skipped"]  # no French probing set under the fixture root: said, not fatal
        retrieval = side["results"]["Tatoeba"]  # the 8 pairs this run's data held out of its own training file
        assert retrieval["n"] == 8 and retrieval["file"] == str(tiny_pairs["parallel"])
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"))
    events.Reload()
    scalars = events.Scalars("fr/retrieval/Tatoeba")
    assert [s.step for s in scalars] == [0, 1]
    assert [s.value for s in scalars] == pytest.approx([d["sides"]["fr"]["results"]["Tatoeba"]["main_score"]
                                                        for d in docs])
    assert "fr/retrieval/Tatoeba/margin_en-fr" in events.Tags()["scalars"]


def test_a_removed_propertys_scores_are_logged_per_epoch(senteval_root, hash_encoder, tmp_path):
    """callbacks.eval_suite.params.amnesic=[Tense]: each epoch's JSON keeps the removal, TensorBoard gets
    amnesic/Tense/<task> (after the removal) and .../control beside the task's own curve."""
    cb = EvalSuiteCallback(tasks=["MR"], data_dir=str(senteval_root), output_dir=str(tmp_path / "eval"),
                           params={**FAST, "amnesic": ["Tense"]}, vocab_expansion=False)
    trainer = _trainer(tmp_path)
    cb.on_train_epoch_end(trainer, _Model(hash_encoder))
    doc = json.loads((tmp_path / "eval" / "epoch_001.json").read_text())
    row = doc["amnesic"]["Tense"]["tasks"]["MR"]
    (_, logged), = trainer.loggers[0].metrics
    assert logged["amnesic/Tense/MR"] == row["after"] and logged["amnesic/Tense/MR/control"] == row["control"]
    assert logged["transfer/MR"] == row["before"] and "amnesic/Tense/directions" in logged
    assert amnesic_metrics({"amnesic": {"Tense": {"error": "x"}}}) == {}


def test_a_suite_a_stop_cut_resumes_its_epoch_file_keeping_the_finished_tasks(senteval_root, hash_encoder, tmp_path):
    """A run resumed at epoch 1's end (issue 85) whose suite a stop cut after its first task: the finished task is kept
    as the file has it (not run again), the others run, the file is finished and every score logged once."""
    cb = EvalSuiteCallback(tasks=["Length", "STS13"], data_dir=senteval_root, params=FAST, output_dir=tmp_path)
    model, trainer = _Model(hash_encoder), _trainer(tmp_path, epoch=0)
    trainer.global_step, trainer.num_training_batches, trainer.accumulate_grad_batches = 10, 10, 1
    cb.on_train_epoch_end(trainer, model)  # epoch 1's suite, whole
    path = tmp_path / "epoch_001.json"
    whole = json.loads(path.read_text())
    cut = dict(whole, results={"Length": dict(whole["results"]["Length"], main_score=12.34)})
    del cut["eval_seconds"]  # as a stop leaves it: the first task written, the suite not at its end
    path.write_text(json.dumps(cut))

    resumed = EvalSuiteCallback(tasks=["Length", "STS13"], data_dir=senteval_root, params=FAST, output_dir=tmp_path)
    trainer = _trainer(tmp_path, epoch=1)  # the state after epoch 1's end
    trainer.global_step, trainer.num_training_batches, trainer.accumulate_grad_batches = 10, 10, 1
    resumed.on_train_start(trainer, model)
    doc = json.loads(path.read_text())
    assert doc["results"]["Length"]["main_score"] == 12.34  # kept, not run again
    assert doc["results"]["STS13"]["main_score"] == pytest.approx(whole["results"]["STS13"]["main_score"])
    assert "eval_seconds" in doc and doc["resumed"]["tasks_kept"] == ["Length"]
    assert [step for step, _ in trainer.loggers[0].metrics] == [1]
    assert set(trainer.loggers[0].metrics[0][1]) == {"probing/Length", "similarity/STS13"}
    again = EvalSuiteCallback(tasks=["Length", "STS13"], data_dir=senteval_root, params=FAST, output_dir=tmp_path)
    again.on_train_start(trainer, model)  # a finished file: not scored again
    assert again.history == {}


class _LayeredModel(_Model):
    """The stand-in with two layers: layer 0 the hash vectors, layer 1 (the output) a fixed map of them whose
    weights ``shift`` changes, as training would."""

    layers_end_with_output = True

    def __init__(self, encoder) -> None:
        super().__init__(encoder)
        self.shift = 0.0

    def encode_layers(self, sentences):
        base = self.encoder.encode(sentences)
        top = np.tanh(base @ np.random.default_rng(1).normal(size=(base.shape[1], 8)) + self.shift * base[:, :8] ** 2)
        return [base, top.astype(np.float32)]

    def encode(self, sentences):
        self.modes.append(self.training)
        return self.encode_layers(sentences)[-1]


def write_stsb(senteval_root: Path) -> None:
    folder = senteval_root / "senteval" / "STS" / "STSBenchmark"
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "dev", "test"):
        rows = [f"main-captions\tMSRvid\t2012test\t{i}\t{i % 6:.1f}\tA man plays thing {i} .\tA man plays item {i} ."
                for i in range(12)]
        (folder / f"sts-{split}.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def test_layer_geometry_each_evaluation_in_the_json_and_the_logged_curves(senteval_root, hash_encoder, tmp_path):
    write_stsb(senteval_root)
    cb = EvalSuiteCallback(tasks=["Length", "STS13"], data_dir=senteval_root, params=FAST, output_dir=tmp_path / "se",
                           geometry={"sample_size": 50})
    model, trainer = _LayeredModel(hash_encoder), _trainer(tmp_path)
    cb.setup(trainer, model, "fit")
    trainer.global_step = 0
    cb.on_train_start(trainer, model)  # epoch 0
    model.shift, trainer.global_step = 0.5, 10
    cb.on_train_epoch_end(trainer, model)  # epoch 1
    first, second = (read_results(tmp_path / "se" / f"epoch_{e:03d}.json") for e in (0, 1))
    assert first["geometry"]["cka"] == {} and first["geometry"]["sample"]["size"] == 50
    assert first["geometry"]["sample"]["positive_pairs"] == 4  # the dev pairs of gold 4 and 5
    cka = second["geometry"]["cka"]
    assert cka["vs_epoch0"]["0"] == pytest.approx(1.0) and cka["vs_epoch0"]["1"] < 0.999  # the top moved, not layer 0
    assert cka["vs_previous"] == cka["vs_epoch0"]
    assert second["geometry"]["sample"]["sha256"] == first["geometry"]["sample"]["sha256"]
    assert set(second["results"]) == {"Length", "STS13"}  # the suite's own scores as ever
    logged = dict(trainer.loggers[0].metrics)
    assert {"cka/layer_0/vs_epoch0", "cka/layer_1/vs_epoch0", "geometry/alignment", "geometry/uniformity"} \
        <= set(logged[1]) and "geometry/uniformity" in logged[0]
    assert sorted(p.name for p in (tmp_path / "se" / "geometry").iterdir()) == ["epoch_000.npz", "epoch_001.npz"]


def test_a_model_without_layers_gets_its_scores_and_the_geometry_error_recorded(senteval_root, hash_encoder,
                                                                                tmp_path, caplog):
    cb = EvalSuiteCallback(tasks=["STS13"], data_dir=senteval_root, params=FAST, output_dir=tmp_path / "se",
                           geometry={})
    model, trainer = _Model(hash_encoder), _trainer(tmp_path)
    cb.setup(trainer, model, "fit")
    cb.on_train_epoch_end(trainer, model)
    doc = read_results(tmp_path / "se" / "epoch_001.json")
    assert "does not give its layers' vectors" in doc["geometry"]["error"] and "STS13" in doc["results"]
    assert "layer geometry" in caplog.text
    with pytest.raises(ValueError, match=r"unknown settings \['size'\]"):
        EvalSuiteCallback(tasks=["STS13"], geometry={"size": 5})
