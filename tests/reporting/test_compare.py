"""python -m sentence_lab.reporting.compare: side-by-side table, noise marks from seeds or test sampling."""
import json
import math

import pytest

from sentence_lab.evaluation.protocol import ProtocolParams
from sentence_lab.evaluation.suite import EvaluationSuite
from sentence_lab.reporting.compare import compare_table, main, noise_band
from tests.helpers.hash_encoder import HashEncoder

PAIRED = ProtocolParams(kfold=2, max_epoch=4, l2_grid=(1e-3,), device="cpu")


def _run(name, **tasks):
    return {"encoder": {"name": name}, "protocol": {"name": "prototype"}, "results": tasks}


def test_seed_spread_decides_when_there_are_seeds():
    a = {"main_score": 80.0, "main_metric": "acc", "main_score_sd": 1.0, "ntest": 500}
    b = {"main_score": 80.8, "main_metric": "acc", "main_score_sd": 0.5, "ntest": 500}
    assert noise_band(a, b) == (1.0, "seed sd")


def test_binomial_band_for_one_seed():
    a = {"main_score": 50.0, "main_metric": "acc", "ntest": 100}
    band, rule = noise_band(a, dict(a))
    # two independent 100-example accuracies at 50%: se 5 points each, 95% band 1.96 * sqrt(2) * 5
    assert rule == "test sampling" and math.isclose(band, 1.96 * math.sqrt(2) * 5.0)


def test_table_marks_and_mean():
    r = lambda s, n=1000: {"main_score": s, "main_metric": "acc", "ntest": n}  # noqa: E731
    runs = [("a", _run("a", MR=r(70.0), TREC=r(80.0))), ("b", _run("b", MR=r(70.5), TREC=r(90.0)))]
    table = compare_table(runs)
    assert "| MR | 70.00 | 70.50 ≈ |" in table and "| TREC | 80.00 | 90.00 ▲ |" in table
    assert "| mean of 2 | 75.00 | 80.25 |" in table


def test_a_presets_scores_are_named_as_not_senteval_s_and_against_full_ones_warned():
    r = {"main_score": 70.0, "main_metric": "acc", "ntest": 1000}
    preset = {**_run("b", MR=r), "protocol": {"name": "prototype", "preset": "curves"}}
    table = compare_table([("a", _run("a", MR=r)), ("b", preset)])
    assert "different protocols" in table and "preset curves are not SentEval's protocol" in table
    assert "preset" not in compare_table([("a", _run("a", MR=r)), ("b", _run("b", MR=r))])


def test_cli(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_run("bow", STS13={"main_score": 0.5, "main_metric": "all.pearson.mean"})))
    b.write_text(json.dumps(_run("bow", STS13={"main_score": 0.6, "main_metric": "all.pearson.mean"})))
    assert main([str(a), str(b), "--out", str(tmp_path / "t.md")]) == 0
    out = capsys.readouterr().out
    assert "bow (" in out and "0.6000" in out and (tmp_path / "t.md").read_text() == out.rstrip("\n") + "\n"
    (tmp_path / "bad.json").write_text("[]")
    assert main([str(a), str(tmp_path / "bad.json")]) == 2
    assert "no 'results'" in capsys.readouterr().err


def test_metric_option_picks_another_key():
    from sentence_lab.reporting.compare import with_metric

    doc = _run("m", STS12={"main_score": 0.5, "main_metric": "all.pearson.mean", "pooled": {"spearman": 0.7,
                                                                                            "nsamples": 3000}})
    r = with_metric(doc, "pooled.spearman")["results"]["STS12"]
    assert r["main_score"] == 0.7 and r["main_metric"] == "pooled.spearman"
    assert with_metric(doc, "nothing.here")["results"]["STS12"]["main_score"] == 0.5


def test_the_simcse_convention_reads_pooled_spearman_and_swaps_in_the_cosine_tasks(tmp_path, capsys):
    sts = {t: {"main_score": 0.1, "main_metric": "all.pearson.mean", "all": {"pearson": {"mean": 0.1}},
               "pooled": {"spearman": 0.5 + i / 100}} for i, t in enumerate(("STS12", "STS13", "STS14", "STS15",
                                                                            "STS16"))}
    trained = {"main_score": 0.9, "main_metric": "pearson", "pearson": 0.9, "spearman": 0.85}
    cosine = {"main_score": 0.7, "main_metric": "test.spearman", "test": {"spearman": 0.7}}
    doc = _run("m", **sts, STSBenchmark=trained, SICKRelatedness=trained, STSBenchmarkCosine=cosine,
               SICKRelatednessCosine=dict(cosine, test={"spearman": 0.6}),
               MR={"main_score": 80.0, "main_metric": "acc"})
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    assert main([str(path), "--sts-convention", "simcse"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("STS as SimCSE's evaluation.py")
    assert "| STS12 | 0.5000 |" in out and "| STS16 | 0.5400 |" in out
    assert "| STSBenchmarkCosine | 0.7000 |" in out and "| SICKRelatednessCosine | 0.6000 |" in out
    assert "| STSBenchmark |" not in out and "| MR |" not in out
    assert f"| mean of 7 | {(0.5 + 0.51 + 0.52 + 0.53 + 0.54 + 0.7 + 0.6) / 7:.4f} |" in out
    assert main([str(path), "--sts-convention", "senteval"]) == 0
    out = capsys.readouterr().out
    assert "| STS12 | 0.1000 |" in out and "| STSBenchmark | 0.9000 |" in out and "Cosine" not in out


def test_an_unreproducible_convention_says_why():
    import pytest

    from sentence_lab.tasks.sts_conventions import convention

    with pytest.raises(ValueError, match="9,927"):
        convention("mteb")


@pytest.mark.slow
def test_paired_tests_of_two_encoders_on_the_same_items(senteval_root, tmp_path, capsys):
    """Each file's items beside it: a table of differences, intervals and p-values; the encoder against itself differs
    by nothing; files scored on other items are refused in one line."""
    suite = EvaluationSuite(["TREC", "STS13"], senteval_root, PAIRED)
    suite.run(HashEncoder(), tmp_path / "a.json")
    suite.run(HashEncoder(dim=4), tmp_path / "b.json")
    suite.run(HashEncoder(), tmp_path / "same.json")
    assert main([str(tmp_path / "a.json"), str(tmp_path / "same.json"), str(tmp_path / "b.json"),
                 "--resamples", "199"]) == 0
    out = capsys.readouterr().out
    assert "| TREC | 0.00 | [0.00, 0.00] | 1.0000 | 1.0000 |" in out  # itself
    assert "| STS13 | 0.0000 | [0.0000, 0.0000] | 1.0000 | 1.0000 |" in out
    assert out.count(" minus hash (") == 2 and "Benjamini-Hochberg" in out
    assert main([str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--no-paired"]) == 0
    assert "minus" not in capsys.readouterr().out
    (tmp_path / "a.items.npz").unlink()  # no items beside the first: the unpaired table alone
    assert main([str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    assert "minus" not in capsys.readouterr().out
    other = EvaluationSuite(["TREC"], senteval_root, PAIRED)
    other.tasks[0].data.splits["test"].a[0] = "another sentence"
    other.run(HashEncoder(), tmp_path / "other.json")
    assert main([str(tmp_path / "same.json"), str(tmp_path / "other.json")]) == 2
    assert "TREC: the two results files scored different test items" in capsys.readouterr().err
