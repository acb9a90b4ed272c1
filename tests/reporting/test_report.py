"""report.py: a directory of runs -> table, figures; correlations by hand; a 2-job multirun end to end."""
from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from sentence_lab.reporting.figures import _pyplot, _save, correlation_matrix
from sentence_lab.reporting.report import build_report, main
from sentence_lab.reporting.runs import Run, find_runs
from tests.helpers.in_process import run_command
from tests.helpers.small_filesystem import fill, small_filesystem
from tests.helpers.train_config import sweep_command

ROOT = Path(__file__).resolve().parents[2]


def fake_run(root: Path, name: str, scores: dict[int, dict[str, float]], objective: str = "qt") -> Path:
    """A run folder as train.py leaves it: .hydra/ config and eval/epoch_NNN.json."""
    run = root / name
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text("seed: 1\nobjective: {_target_: x}\ntrainer: {max_epochs: 2}\n"
                                                "data: {batch_size: 8}\nmodel: {optimizer: {lr: 0.1}}\ntags: [t]\n")
    (run / ".hydra" / "hydra.yaml").write_text(
        f"hydra:\n  runtime:\n    choices:\n      objective: {objective}\n      encoder: bow\n      data: books\n")
    (run / "eval").mkdir()
    for epoch, tasks in scores.items():
        doc = {"epoch": epoch, "results": {t: {"main_score": s} for t, s in tasks.items()}}
        (run / "eval" / f"epoch_{epoch:03d}.json").write_text(json.dumps(doc))
    return run


def test_table_has_final_and_best_scores_and_settings(tmp_path):
    fake_run(tmp_path, "a", {0: {"Length": 50.0, "MR": 60.0}, 1: {"Length": 70.0, "MR": 58.0}, 2: {"Length": 65.0}})
    fake_run(tmp_path, "b", {0: {"Length": 40.0}}, objective="nli")
    (tmp_path / "evalonly" / ".hydra").mkdir(parents=True)  # an evaluate.py folder: not a run
    (tmp_path / "evalonly" / ".hydra" / "config.yaml").write_text("tasks: all\n")
    runs = build_report(tmp_path)
    assert [r.name for r in runs] == ["a", "b"]
    rows = list(csv.DictReader((tmp_path / "report.csv").open()))
    assert rows[0]["objective"] == "qt" and rows[1]["objective"] == "nli" and rows[0]["lr"] == "0.1000"
    assert (rows[0]["Length final"] == "65.00" and rows[0]["Length best"] == "70.00"
            and rows[0]["Length best epoch"] == "1")
    assert rows[0]["MR final"] == "58.00" and rows[0]["MR best epoch"] == "0" and rows[1]["MR final"] == ""
    assert (tmp_path / "probing_curves.png").stat().st_size > 1000
    assert "| a | qt | bow | books |" in (tmp_path / "report.md").read_text()


def test_a_run_scored_by_the_curve_preset_is_named_in_the_report(tmp_path):
    fake_run(tmp_path, "full", {0: {"Length": 50.0}})
    preset = fake_run(tmp_path, "fast", {0: {"Length": 48.0}})
    doc = {"epoch": 0, "preset": {"name": "curves"}, "results": {"Length": {"main_score": 48.0}}}
    (preset / "eval" / "epoch_000.json").write_text(json.dumps(doc))
    runs = build_report(tmp_path)
    assert [(r.name, r.preset) for r in runs] == [("fast", "curves"), ("full", None)]
    assert "not SentEval's protocol" in (text := (tmp_path / "report.md").read_text()) and "fast (curves)" in text


def test_reference_results_sit_beside_the_runs(tmp_path):
    fake_run(tmp_path, "a", {0: {"Length": 50.0, "MR": 60.0}, 1: {"Length": 70.0, "MR": 58.0}})
    ref = tmp_path / "minilm.json"
    ref.write_text(json.dumps({"encoder": {"name": "sentence_transformers:model"},
                               "results": {"Length": {"main_score": 61.5}, "MR": {"main_score": 75.2}}}))
    assert main([str(tmp_path), "--reference", str(ref)]) == 0
    rows = list(csv.DictReader((tmp_path / "report.csv").open()))
    assert rows[1]["run"] == "reference: sentence_transformers:model" and rows[1]["Length final"] == "61.50"
    assert rows[1]["MR final"] == "75.20"


def test_a_figure_is_never_written_through_a_link_planted_at_a_temporary_name(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    out = tmp_path / "report"
    out.mkdir()
    (out / f".probing_curves.tmp{os.getpid()}.png").symlink_to(outside)  # the name a figure was once drawn into
    plt = _pyplot()
    fig = plt.figure()
    fig.gca().plot([0, 1], [1, 0])
    _save(fig, out / "probing_curves.png")
    assert outside.read_text() == "keep\n"
    assert (out / "probing_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (out / "probing_curves.png").is_symlink()

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    fig.savefig = broken
    with pytest.raises(OSError, match="No space"):
        _save(fig, out / "losses.png")
    plt.close(fig)
    assert sorted(p.name for p in out.iterdir()) == [f".probing_curves.tmp{os.getpid()}.png", "probing_curves.png"]


def test_correlations_across_runs_by_hand():
    def run(length, wc, mr):
        r = Run(Path("x"), "x", families={"Length": "probing", "WordContent": "probing", "MR": "transfer"})
        r.curves = {"Length": {1: length}, "WordContent": {1: wc}, "MR": {1: mr}}
        return r

    runs = [run(1, 4, 10), run(2, 3, 20), run(3, 1, 30), run(4, 2, 40)]
    probing, downstream, rho, pval = correlation_matrix(runs)
    assert probing == ["Length", "WordContent"] and downstream == ["MR"]
    assert rho[0, 0] == pytest.approx(1.0)  # same order
    # WordContent ranks 4,3,1,2 against 1,2,3,4: d^2 = 9+1+4+4 = 18, rho = 1 - 6*18/(4*15) = -0.8
    assert rho[1, 0] == pytest.approx(-0.8)
    # exact p over the 24 orders of 4 runs: |rho| >= 0.8 for the 2 perfect ones and 6 at +-0.8 -> 8/24
    assert pval[1, 0] == pytest.approx(8 / 24) and pval[0, 0] == pytest.approx(2 / 24)
    _, _, rho3, p3 = correlation_matrix(runs[:3])
    assert rho3[0, 0] == pytest.approx(1.0) and p3[0, 0] == pytest.approx(1 / 3)  # never "significant" on 3 runs


def test_no_run_is_a_one_line_error(tmp_path, capsys):
    assert main([str(tmp_path)]) == 2
    assert "no run under" in capsys.readouterr().err


@pytest.mark.slow
def test_two_job_multirun_then_report(tiny_corpus, senteval_root, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    sweep = tmp_path / "sweep"
    cmd = sweep_command(tiny_corpus, senteval_root, tmp_path, "[Length,WordContent,STS13]", "-m", "encoder=bow,gru",
                        "encoder.freeze_embeddings=false", "trainer.max_epochs=2", "data.batch_size=8")
    done = run_command(cmd, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    for job in ("0", "1"):
        assert sorted(p.name for p in (sweep / job / "eval").glob("*.json")) == [
            "epoch_000.json", "epoch_001.json", "epoch_002.json"]
    report = run_command([sys.executable, str(ROOT / "report.py"), str(sweep)], cwd=tmp_path, env=env)
    assert report.returncode == 0, report.stderr[-2000:]
    runs = find_runs(sweep)
    assert [r.choices["encoder"] for r in runs] == ["bow", "gru"]
    assert all(sorted(r.curves["Length"]) == [0, 1, 2] for r in runs)
    table = (sweep / "report.md").read_text()
    assert "| 0 | qt | bow |" in table and "| 1 | qt | gru |" in table
    for png in ("probing_curves.png", "training_loss.png"):
        assert (sweep / png).stat().st_size > 1000
    assert np.isfinite(runs[0].loss[-1][1])


def test_probes_selectivity_and_codelength_per_epoch_reach_the_table_and_a_figure(tmp_path):
    run = fake_run(tmp_path, "a", {0: {"Length": 50.0}, 1: {"Length": 70.0}})
    for epoch, (sel, kbits) in enumerate([(10.0, 9.5), (25.0, 6.0)]):
        path = run / "eval" / f"epoch_{epoch:03d}.json"
        doc = json.loads(path.read_text())
        doc["results"]["Length"].update(probe={"type": "mlp", "nhid": 100 + epoch, "dropout": 0.1, "l2": 1e-4},
                                        selectivity=sel, mdl={"online_kbits": kbits, "compression": 2.0})
        path.write_text(json.dumps(doc))
    fake_run(tmp_path, "b", {0: {"Length": 40.0}})  # measured nothing: no probe row
    runs = build_report(tmp_path)
    assert runs[0].measures == {"selectivity": {"Length": {0: 10.0, 1: 25.0}},
                                "mdl_kbits": {"Length": {0: 9.5, 1: 6.0}}}
    report = (tmp_path / "report.md").read_text()
    assert "| a | MLP 101/0.1, selectivity 25.0, MDL 6.0 kbits (compression 2.00) |" in report
    assert "| b |" not in report.split("Probes of the last epoch")[1]
    assert (tmp_path / "probing_measures.png").stat().st_size > 1000


def test_sts_convention_prints_the_chosen_keys_of_the_last_epoch(tmp_path):
    """--sts-convention simcse: STS12-16 pooled Spearman and the cosine tasks' test Spearman, x100, with their mean;
    a run that did not evaluate a task has an empty cell and no mean."""
    sts = {f"STS1{i}": {"main_score": 0.5, "pooled": {"spearman": 0.60 + i / 100}, "all": {"pearson": {"mean": 0.1}}}
           for i in range(2, 7)}
    cosine = {"STSBenchmarkCosine": {"main_score": 0.7, "test": {"spearman": 0.71}},
              "SICKRelatednessCosine": {"main_score": 0.6, "test": {"spearman": 0.65}}}
    run = fake_run(tmp_path, "a", {0: {}, 1: {}})
    (run / "eval" / "epoch_001.json").write_text(json.dumps({"epoch": 1, "results": {**sts, **cosine}}))
    other = fake_run(tmp_path, "b", {0: {}})
    (other / "eval" / "epoch_000.json").write_text(json.dumps({"epoch": 0, "results": sts}))
    assert main([str(tmp_path), "--sts-convention", "simcse"]) == 0
    report = (tmp_path / "report.md").read_text()
    assert "STS as SimCSE's evaluation.py" in report
    assert "| STS12 | 62.00 | 62.00 |" in report and "| STS16 | 66.00 | 66.00 |" in report
    assert "| STSBenchmarkCosine | 71.00 |  |" in report and "| SICKRelatednessCosine | 65.00 |  |" in report
    assert f"| mean | {(62 + 63 + 64 + 65 + 66 + 71 + 65) / 7:.2f} |  |" in report


def test_a_full_disk_is_one_line_and_exit_4(tmp_path, capsys):
    with small_filesystem(tmp_path, "1m") as small:
        fake_run(small, "a", {0: {"Length": 50.0}, 1: {"Length": 60.0}})
        fake_run(small, "b", {0: {"Length": 55.0}, 1: {"Length": 58.0}})
        fill(small)
        code = main([str(small)])
    err = capsys.readouterr().err.strip()
    assert code == 4 and len(err.splitlines()) == 1
    assert err.startswith(f"error: could not write {small}") and "No space left on device" in err


def test_layers_per_epoch_reach_a_table_with_each_tasks_peak_and_a_heatmap(tmp_path):
    run = fake_run(tmp_path, "a", {0: {"Length": 50.0, "MR": 60.0}, 1: {"Length": 55.0, "MR": 70.0}})
    layers = {0: {"Length": [80.0, 60.0, 50.0], "MR": [55.0, 58.0, 60.0]},
              1: {"Length": [80.0, 70.0, 55.0], "MR": [55.0, 72.0, 70.0]}}
    for epoch, tasks in layers.items():
        path = run / "eval" / f"epoch_{epoch:03d}.json"
        doc = json.loads(path.read_text())
        for task, scores in tasks.items():
            doc["results"][task]["layers"] = {str(k): {"main_score": s} for k, s in enumerate(scores)}
        path.write_text(json.dumps(doc))
    fake_run(tmp_path, "b", {0: {"Length": 40.0}})  # no layers: no table, no row of the figure
    runs = build_report(tmp_path)
    assert runs[0].layers["MR"] == {0: {0: 55.0, 1: 55.0}, 1: {0: 58.0, 1: 72.0}, 2: {0: 60.0, 1: 70.0}}
    report = (tmp_path / "report.md").read_text()
    assert "| Length | **80.00** | 70.00 | 55.00 | 0.00 |" in report  # the last epoch; peak at the bottom
    assert "| MR | 55.00 | **72.00** | 70.00 | 0.50 |" in report  # peak in the middle of the depth
    assert "Scores per layer, b" not in report
    assert (tmp_path / "probing_layers.png").stat().st_size > 1000


def test_a_second_language_reaches_the_report_with_retrievals_baselines(tmp_path):
    run = fake_run(tmp_path, "jbi", {0: {"STS12": 0.38}, 1: {"STS12": 0.41}, 2: {"STS12": 0.43}}, objective="jbi")
    errors = {0: 99.85, 1: 7.25, 2: 5.5}
    for epoch, error in errors.items():
        path = run / "eval" / f"epoch_{epoch:03d}.json"
        doc = json.loads(path.read_text())
        doc["sides"] = {"fr": {"results": {
            "Length": {"main_score": 30.0 + epoch},
            "Tatoeba": {"main_score": error, "baselines": {
                "random": {"margin": {"en->fr": 99.8, "fr->en": 100.0}},
                "char_ngram": {"margin": {"en->fr": 74.0, "fr->en": 73.0}}}}},
            "skipped": {}, "errors": {}}}
        path.write_text(json.dumps(doc))
    fake_run(tmp_path, "qt", {0: {"STS12": 0.3}})
    runs = build_report(tmp_path)
    assert runs[0].sides == {"fr": {"Length": {0: 30.0, 1: 31.0, 2: 32.0}, "Tatoeba": errors}}
    report = (tmp_path / "report.md").read_text()
    assert "Second language `fr`, jbi" in report and "Second language `fr`, qt" not in report
    assert "| Tatoeba | 99.85 | 5.50 | 2 |" in report and "| Length | 30.00 | 32.00 | 2 |" in report
    assert "| Tatoeba baseline: char ngram | 73.50 | | |" in report
    assert "| Tatoeba baseline: random | 99.90 | | |" in report
