"""The runner: every regime on fixtures, encode-once cache, incremental atomic results, encoder errors."""
from __future__ import annotations

import json

import numpy as np
import pytest

from sentence_lab.evaluation.encoders.text_encoders import EncoderOutputError
from sentence_lab.evaluation.results import ResultsWriter
from sentence_lab.evaluation.runner import load_tasks, params_from_config, run_tasks
from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache
from sentence_lab.text.files import atomic_write_text

FAST = {"name": "prototype", "kfold": 2, "epoch_size": 1, "max_epoch": 4, "tenacity": 1, "l2_grid": [1e-3],
        "classifier": {"nhid": 0, "dropout": 0.0}}


def _run(root, names, encoder, tmp_path, params=None):
    loaded = load_tasks(names, root)
    writer = ResultsWriter(tmp_path / "out" / "results.json", {"protocol": {"name": "test"}})
    doc = run_tasks(loaded, encoder, params or params_from_config(FAST), writer)
    return doc, json.loads((tmp_path / "out" / "results.json").read_text())


def test_params_from_config_maps_classifier_keys():
    p = params_from_config({**FAST, "classifier": {"nhid": 50, "dropout": 0.1}, "encode_batch_size": 128})
    assert p.nhid == 50 and p.dropout == 0.1 and p.kfold == 2 and p.l2_grid == (1e-3,)


def test_every_regime_on_fixtures(senteval_root, hash_encoder, tmp_path):
    names = ["MR", "TREC", "MRPC", "SST5", "SICKEntailment", "SNLI", "SICKRelatedness", "STS12", "Tense", "WordContent",
             "TopConstituents"]
    doc, on_disk = _run(senteval_root, names, hash_encoder, tmp_path)
    res = on_disk["results"]
    assert set(res) == set(names) - {"TopConstituents"}
    assert "top_constituents" in on_disk["skipped"]["TopConstituents"]
    assert on_disk["errors"] == {}
    for task in ("MR", "TREC", "MRPC", "SST5", "SICKEntailment", "SNLI", "Tense"):
        assert 0 <= res[task]["acc"] <= 100 and res[task]["main_score"] == res[task]["acc"]
        assert res[task]["main_metric"] == "acc"
    assert 0 <= res["MRPC"]["f1"] <= 100
    assert {"pearson", "spearman", "mse"} <= set(res["SICKRelatedness"]) and "yhat" not in res["SICKRelatedness"]
    assert -1 <= res["SICKRelatedness"]["pearson"] <= 1
    assert set(res["STS12"]["all"]) == {"pearson", "spearman"}
    assert set(res["STS12"]["all"]["pearson"]) == {"mean", "wmean"}
    assert res["STS12"]["main_score"] == res["STS12"]["all"]["pearson"]["mean"]
    assert res["Tense"]["split"].startswith("xprobe")
    assert res["WordContent"]["params_override"] == {"nhid": 0, "nhid_grid": None}
    assert res["SNLI"]["params_override"]["l2_grid"] == [1e-9]
    for r in res.values():
        assert r["n"] > 0 and r["seconds"] >= r["encode_seconds"] >= 0
    md = (tmp_path / "out" / "results.md").read_text()
    assert "| MR |" in md and "TopConstituents | skipped" in md


def test_each_distinct_sentence_encoded_once(senteval_root, hash_encoder, tmp_path):
    _run(senteval_root, ["SICKEntailment", "SICKRelatedness", "STS12"], hash_encoder, tmp_path)
    assert len(hash_encoder.seen) == len(set(hash_encoder.seen))
    assert max(hash_encoder.calls) <= 128


def test_cache_sorts_by_length_and_batches():
    class Rec:
        def __init__(self):
            self.batches = []

        def encode(self, s):
            self.batches.append(list(s))
            return np.ones((len(s), 3), dtype=np.float32)

    enc = Rec()
    cache = EmbeddingCache(enc, batch_size=2)
    out = cache.embed(["a b c", "a", "a b", "a", "x y z w"])
    assert out.shape == (5, 3)
    assert enc.batches == [["a", "a b"], ["a b c", "x y z w"]]
    cache.embed(["a", "a b"])
    assert len(enc.batches) == 2 and cache.encoded == 4


@pytest.mark.parametrize("bad", ["shape", "rows"])
def test_bad_encoder_is_a_clear_error_and_keeps_results(senteval_root, tmp_path, bad, hash_encoder):
    class Bad:
        def __init__(self):
            self.n = 0

        def encode(self, s):
            self.n += 1
            if self.n == 1:  # first task fine
                return hash_encoder.encode(s)
            if bad == "nan":
                out = np.zeros((len(s), 16), dtype=np.float32)
                out[0, 0] = np.nan
                return out
            if bad == "shape":
                return np.zeros((len(s), 8), dtype=np.float32)
            return np.zeros((len(s) + 1, 16), dtype=np.float32)

        def describe(self):
            return {"name": "bad"}

    loaded = load_tasks(["STS13", "STS14"], senteval_root)
    writer = ResultsWriter(tmp_path / "r.json", {})
    with pytest.raises(EncoderOutputError) as err:
        run_tasks(loaded, Bad(), params_from_config(FAST), writer, encode_batch_size=10_000)
    msg = str(err.value)
    assert "\n" not in msg and {"shape": "8-d", "rows": "shape"}[bad] in msg
    on_disk = json.loads((tmp_path / "r.json").read_text())
    assert "STS13" in on_disk["results"] and "STS14" in on_disk["aborted"]


def test_nan_on_one_task_fails_that_task_only(senteval_root, tmp_path, hash_encoder):
    class NanOnSts14:
        def encode(self, sentences):
            out = hash_encoder.encode(sentences)
            if any(s in sts14 for s in sentences):
                out[0, 0] = np.nan
            return out

        def describe(self):
            return {"name": "nan-on-sts14"}

    loaded = load_tasks(["STS13", "STS14", "STS15"], senteval_root)
    sts14 = set(loaded[1].data.sentences()) - set(loaded[0].data.sentences()) - set(loaded[2].data.sentences())
    doc = run_tasks(loaded, NanOnSts14(), params_from_config(FAST), ResultsWriter(tmp_path / "r.json", {}))
    assert set(doc["results"]) == {"STS13", "STS15"} and "aborted" not in doc
    assert "NaN/inf" in doc["errors"]["STS14"] and "\n" not in doc["errors"]["STS14"]


def test_atomic_write_leaves_no_temp_files(tmp_path):
    atomic_write_text(tmp_path / "x.json", "{}")
    atomic_write_text(tmp_path / "x.json", "{\"a\": 1}")
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]
    assert json.loads((tmp_path / "x.json").read_text()) == {"a": 1}


def test_nan_results_become_null(tmp_path):
    w = ResultsWriter(tmp_path / "r.json", {})
    w.add_result("STS12", {"all": {"pearson": {"mean": float("nan")}}, "main_score": np.float32(0.5)})
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["results"]["STS12"]["all"]["pearson"]["mean"] is None
    assert doc["results"]["STS12"]["main_score"] == 0.5


def test_results_record_the_encoders_oov_rate_per_task(senteval_root, hash_encoder, tmp_path):
    known = {"the", "a", "and"}

    class WithVocab(type(hash_encoder)):
        def oov_rate(self, sentences):
            tokens = [w for s in sentences for w in s.split()]
            return sum(w not in known for w in tokens) / len(tokens)

    encoder = WithVocab()
    _, on_disk = _run(senteval_root, ["MR", "STS12"], encoder, tmp_path)
    from sentence_lab.tasks.registry import TASKS

    for task in ("MR", "STS12"):
        sentences = list(dict.fromkeys(TASKS[task].loader(senteval_root).sentences()))
        assert on_disk["results"][task]["oov_rate"] == round(encoder.oov_rate(sentences), 4)
        assert 0 < on_disk["results"][task]["oov_rate"] < 1
    _, plain = _run(senteval_root, ["MR"], hash_encoder, tmp_path / "plain")
    assert "oov_rate" not in plain["results"]["MR"]


def test_controls_and_mdl_are_one_setting_away_and_reuse_the_cached_vectors(senteval_root, hash_encoder, tmp_path):
    params = params_from_config({**FAST, "controls": True, "mdl": True,
                                 "classifier": {"nhid_grid": [4, 8], "dropout_grid": [0.0, 0.1]}})
    plain, _ = _run(senteval_root, ["Tense", "MR"], hash_encoder, tmp_path / "plain")
    before = len(hash_encoder.seen)
    doc, on_disk = _run(senteval_root, ["Tense", "MR"], hash_encoder, tmp_path, params)
    second = hash_encoder.seen[before:]
    assert len(second) == len(set(second))  # the control and the codelength read the cached vectors
    tense = on_disk["results"]["Tense"]
    assert tense["selectivity"] == round(tense["acc"] - tense["control"]["acc"], 2)
    assert tense["control"]["function"] == "first_word" and tense["control"]["probe"]["type"] == "mlp"
    chosen = {k: tense["probe"][k] for k in ("nhid", "dropout", "l2")}
    assert {k: tense["control"]["probe"][k] for k in chosen} == chosen  # the control uses the task's chosen probe
    assert tense["probe"]["nhid"] in (4, 8) and tense["probe"]["dropout"] in (0.0, 0.1)
    assert tense["mdl"]["uniform_kbits"] > 0 and tense["mdl"]["block_ends"][-1] == len(load_tasks(
        ["Tense"], senteval_root)[0].data.splits["train"])
    assert tense["control_seconds"] > 0 and tense["mdl_seconds"] > 0
    assert "control" not in on_disk["results"]["MR"] and "mdl" not in on_disk["results"]["MR"]  # probing tasks only
    assert "selectivity" not in plain["results"]["Tense"]
