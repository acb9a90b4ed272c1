"""training.diagnostics: the vector statistics on vectors whose answers are known, and the callback on a run."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from sentence_lab.objectives.decoders import GRUDecoder
from sentence_lab.runs.run import fit
from sentence_lab.training.diagnostics import (
    VectorDiagnostics,
    maxpool_winner_share,
    spread_indices,
    vector_statistics,
    word_norms_by_frequency,
)
from tests.helpers.train_config import compose_objective_cfg, compose_train_cfg


def test_vectors_all_pointing_one_way_are_fully_anisotropic_and_of_rank_one():
    rng = np.random.default_rng(0)
    direction = rng.standard_normal(16)
    stats = vector_statistics(np.outer(rng.uniform(1, 2, 300), direction))
    assert stats["anisotropy"] == pytest.approx(1.0)
    assert stats["pc1_share"] == pytest.approx(1.0)
    assert stats["effective_rank"] == pytest.approx(1.0, abs=1e-6)


def test_isotropic_vectors_use_every_direction():
    x = np.random.default_rng(1).standard_normal((20000, 8))
    stats = vector_statistics(x)
    assert abs(stats["anisotropy"]) < 0.02
    assert stats["pc1_share"] == pytest.approx(1 / 8, abs=0.01)
    assert stats["effective_rank"] == pytest.approx(8, abs=0.1)
    assert stats["norm"] == pytest.approx(np.sqrt(8), rel=0.05) and stats["dead_dim_share"] == 0.0


def test_a_dead_dimension_is_counted():
    x = np.random.default_rng(2).standard_normal((500, 4))
    x[:, 3] = 0.5
    assert vector_statistics(x)["dead_dim_share"] == pytest.approx(0.25)


def test_maxpool_winner_share_counts_the_positions_that_win_a_dimension():
    states = torch.zeros(2, 4, 3)
    states[0, 1] = 5.0  # sentence 0 (length 4): position 1 wins every dimension -> 1/4
    states[1, 0, 0], states[1, 1, 1], states[1, 2, 2] = 1.0, 1.0, 1.0  # sentence 1 (length 3): three winners -> 1
    states[1, 3] = 9.0  # padding never wins
    assert maxpool_winner_share(states, torch.tensor([4, 3])) == pytest.approx((1 / 4 + 1) / 2)


@pytest.mark.slow
def test_the_callback_measures_a_decoding_objective_at_its_steps(tiny_corpus, tmp_path):
    cfg = compose_train_cfg(tiny_corpus, tmp_path, [
        "objective=skipthought", "encoder=bilstm_max", "encoder.embed_dim=16", "encoder.hidden_dim=8",
        "encoder.embedding_init=random", "objective.hidden_dim=16", "objective.embed_dim=8", "trainer.max_steps=6",
        "trainer.max_epochs=5", "trainer.max_time=null", "trainer.val_check_interval=1.0", "logger=none",
        "callbacks=[default,vector_diagnostics]", "~callbacks.eval_suite", "~callbacks.rich_progress_bar",
        "~callbacks.model_summary", "callbacks.vector_diagnostics.steps=[0,3]",
        "callbacks.vector_diagnostics.n_batches=2"])
    fit(cfg)
    records = [json.loads(line) for line in (tmp_path / "diagnostics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 3, 6]
    for record in records:
        assert 0 < record["maxpool_winners"] <= 1 and record["dim"] == 16
        assert np.isfinite(record["decoder_loss"]) and np.isfinite(record["decoder_loss_mean_vector"])
        assert record["word_norm_top50"] > 0  # the encoder's word table, by frequency band
        assert record["document_use"] == pytest.approx(record["decoder_loss_other_batch"]
                                                       - record["decoder_loss_mean_vector"])
    assert records[0]["decoder_loss"] != records[-1]["decoder_loss"]  # the weights moved between measurements


def test_word_norms_are_averaged_per_frequency_band_of_the_vocabulary():
    table = torch.zeros(600, 3)
    table[4:54, 0] = 2.0  # the 50 most frequent words
    table[54:504, 1] = 1.0
    table[504:, 2] = 0.5  # the rest of a 600-word vocabulary: no rows beyond 5004
    table[:4] = 100.0  # the specials are left out
    assert word_norms_by_frequency(table) == {"word_norm_top50": 2.0, "word_norm_top500": 1.0,
                                              "word_norm_top5000": 0.5}


def test_the_fixed_batches_are_spread_over_the_validation_data():
    assert spread_indices(10, 4) == [0, 3, 6, 9]
    assert spread_indices(3, 4) == [0, 1, 2]
    assert spread_indices(100, 1) == [0]
    assert spread_indices(5, 2) == [0, 4]


def test_a_fresh_run_starts_its_decoders_from_the_datas_word_frequencies(tiny_corpus, tmp_path):
    cfg = compose_train_cfg(tiny_corpus, tmp_path, [
        "objective=skipthought", "encoder=bow", "encoder.embed_dim=8", "encoder.embedding_init=random",
        "objective.hidden_dim=8", "objective.embed_dim=4", "objective.output_bias=log_unigram",
        "objective.condition_norm=true", "trainer.max_steps=1", "trainer.max_time=null", "logger=none",
        "trainer.val_check_interval=1.0",
        "~callbacks.eval_suite", "~callbacks.rich_progress_bar", "~callbacks.model_summary"])
    trainer, _ = fit(cfg)
    counts = torch.from_numpy(trainer.datamodule.token_counts()["source"])
    init = torch.load(tmp_path / "checkpoints" / "init.ckpt", weights_only=False)["state_dict"]
    bias = init["objective.decoders.next.output.bias"]
    expected = GRUDecoder(bias.shape[0], 16, 4, 8)
    expected.init_output_bias(counts)
    torch.testing.assert_close(bias, expected.output.bias.detach())
    assert "objective.decoders.next.condition_norm.weight" in init


DIAGNOSTICS = ["+callbacks.diagnostics._target_=sentence_lab.training.diagnostics.VectorDiagnostics",
               "+callbacks.diagnostics.steps=[0,2]", "+callbacks.diagnostics.n_batches=1"]
QUIET = ["logger=none", "~callbacks.eval_suite", "~callbacks.rich_progress_bar", "~callbacks.model_summary",
         "trainer.max_steps=3", "trainer.max_epochs=5", "trainer.max_time=null", "++trainer.val_check_interval=1.0"]


@pytest.mark.slow
def test_pairs_are_measured_on_their_source_side(tiny_corpus, tiny_pairs, tmp_path):
    """NMT's batches are pairs: the vectors are the source sentences' and the gap is measured on the pairs."""
    cfg = compose_objective_cfg("nmt", tiny_corpus, tiny_pairs, tmp_path, [
        "encoder=gru", "encoder.hidden_dim=8", "objective.hidden_dim=16", "objective.embed_dim=8",
        "objective.bleu_sentences=4", *QUIET, *DIAGNOSTICS])
    fit(cfg)
    records = [json.loads(line) for line in (tmp_path / "diagnostics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 2, 3]
    assert all(r["dim"] == 8 and np.isfinite(r["decoder_loss_mean_vector"]) for r in records)


def test_a_measurement_that_fails_is_a_line_not_the_end_of_the_run(tiny_corpus, tmp_path, monkeypatch):
    def broken(self, trainer, pl_module, step):
        raise RuntimeError("no memory left for the diagnostics")

    monkeypatch.setattr(VectorDiagnostics, "measure", broken)
    cfg = compose_train_cfg(tiny_corpus, tmp_path, [
        "objective=autoencoder", "encoder=gru", "encoder.hidden_dim=8", "objective.hidden_dim=16",
        "objective.embed_dim=8", *QUIET, *DIAGNOSTICS])
    trainer, _ = fit(cfg)
    assert trainer.global_step == 3
    records = [json.loads(line) for line in (tmp_path / "diagnostics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 2, 3]
    assert all("no memory left" in r["error"] for r in records)
