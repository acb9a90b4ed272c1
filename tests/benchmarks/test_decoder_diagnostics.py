"""benchmarks/decoder_diagnostics.py on records made here: the table and the plot of two runs together."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from tests.helpers.figure_layout import overlapping_texts

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("decoder_diagnostics", ROOT / "benchmarks" / "decoder_diagnostics.py")
assert SPEC is not None and SPEC.loader is not None  # a .py file: its spec and loader exist
decoder_diagnostics = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(decoder_diagnostics)


def _run(folder: Path, objective: str, anisotropy: list[float]) -> Path:
    (folder / ".hydra").mkdir(parents=True)
    (folder / ".hydra" / "overrides.yaml").write_text(f"- objective={objective}\n- trainer.max_steps=50\n")
    records = [{"step": step, "anisotropy": a, "norm": 2.0, "decoder_loss": 6.0, "decoder_loss_mean_vector": 6.5,
                "vector_use": 0.5} for step, a in zip((0, 25, 50), anisotropy)]
    (folder / "diagnostics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def test_show_prints_each_runs_table_and_plots_them_together(tmp_path, capsys):
    a = _run(tmp_path / "a", "skipthought", [0.9, 0.99, 0.991])
    b = _run(tmp_path / "b", "autoencoder", [0.9, 0.5, 0.4])
    record = tmp_path / "record.json"
    assert decoder_diagnostics.main(["--show", str(a), str(b), "--output", str(record)]) == 0
    out = capsys.readouterr().out
    assert "objective=skipthought" in out and "objective=autoencoder" in out
    assert "| 25 | 0.990 |" in out and "| 50 | 0.400 |" in out
    assert (a / "diagnostics.png").stat().st_size > 10_000 and (b / "diagnostics.md").is_file()
    runs = json.loads(record.read_text())["results"]["runs"]
    assert [r["records"][-1]["anisotropy"] for r in runs] == [0.991, 0.4]


def test_the_plot_of_three_runs_with_long_labels_draws_no_text_over_another(tmp_path, monkeypatch):
    drawn = []
    save = decoder_diagnostics.plt.Figure.savefig

    def save_and_check(fig, *args, **kwargs):
        save(fig, *args, **kwargs)
        drawn.append(overlapping_texts(fig))

    monkeypatch.setattr(decoder_diagnostics.plt.Figure, "savefig", save_and_check)
    rows = [{"step": step, **{key: 0.5 + step / 100 for key, _, _ in decoder_diagnostics.COLUMNS[1:]}}
            for step in (0, 25, 50, 100)]
    long = ("objective=skipthought objective.output_bias=log_unigram objective.condition_norm=true "
            "objective.word_dropout=0.5 model.encoder_frozen_steps=100 model.encoder_lr_scale=0.2")
    decoder_diagnostics.plot({"objective=skipthought": rows, long: rows, long + " seed=2": rows},
                             tmp_path / "diagnostics.png")
    assert drawn == [[]]
