"""Every objective with every encoder trains through train.py's code path on fixtures; contract errors."""
from __future__ import annotations

import pytest
import torch

from sentence_lab.evaluation.results import read_results
from sentence_lab.runs.run import fit, train
from sentence_lab.training.module import SentenceModel
from tests.helpers.train_config import compose_objective_cfg, compose_train_cfg
from tests.helpers.weight_snapshots import EncoderAndDecoderSnapshots

pytestmark = pytest.mark.slow  # end-to-end: outside the fast tier (-m "not slow")

OBJECTIVES = ["qt", "skipthought", "nli", "nmt", "autoencoder", "jbi", "jpa"]
ENCODERS = ["bow", "bow_sum", "gru", "bigru", "bilstm_max", "bilstm_last", "gatedconv", "mc_bilstm_max",
            pytest.param("transformer", marks=pytest.mark.second_part)]
SMALL_DECODER = ["objective.hidden_dim=16", "objective.embed_dim=8"]
QUIET = ["logger=none", "~callbacks.rich_progress_bar", "~callbacks.model_summary"]


def small(objective: str) -> list[str]:
    return SMALL_DECODER if objective in ("skipthought", "nmt", "autoencoder") else []


@pytest.mark.parametrize("encoder", ENCODERS)
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_fast_dev_run_every_objective_with_every_encoder(objective, encoder, tiny_corpus, tiny_pairs, tmp_path):
    overrides = [f"encoder={encoder}", "++trainer.fast_dev_run=true", *QUIET, *small(objective)]
    if objective == "jbi":
        overrides.append("objective.k=3")
    cfg = compose_objective_cfg(objective, tiny_corpus, tiny_pairs, tmp_path, overrides)
    trainer, model = fit(cfg)
    assert trainer.state.finished
    assert torch.isfinite(trainer.callback_metrics["train/loss_epoch"])
    assert cfg.monitor in trainer.callback_metrics, f"{cfg.monitor} not logged"
    emb = model.encode(["The old man saw the river.", "A dog ran"])
    assert emb.shape == (2, model.output_dim)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_every_objective_trains_in_bf16_mixed_precision(objective, tiny_corpus, tiny_pairs, tmp_path):
    """``trainer.precision=bf16-mixed`` (the GPU setting, run here on the CPU): a finite loss, float32 vectors."""
    overrides = ["encoder=bilstm_max", "encoder.hidden_dim=16", "++trainer.fast_dev_run=true",
                 "trainer.precision=bf16-mixed", *QUIET, *small(objective)]
    overrides += ["objective.k=3"] if objective == "jbi" else []
    cfg = compose_objective_cfg(objective, tiny_corpus, tiny_pairs, tmp_path, overrides)
    trainer, model = fit(cfg)
    loss = trainer.callback_metrics["train/loss_epoch"]
    assert trainer.precision == "bf16-mixed" and torch.isfinite(loss)
    emb = model.encode(["The old man saw the river.", "A dog ran"])
    assert emb.dtype.name == "float32" and emb.shape == (2, model.output_dim)


def test_skipthought_trains_on_triples_from_anywhere_with_a_decoder_for_the_sentence_itself(tiny_corpus, tiny_pairs,
                                                                                             tmp_path):
    overrides = ["encoder=bow", "data.batch_size=6", "data.run_length=3", "objective.targets=[previous,current,next]",
                 "trainer.max_epochs=1", "trainer.max_steps=-1", "trainer.val_check_interval=1.0", *QUIET,
                 *SMALL_DECODER]
    cfg = compose_objective_cfg("skipthought", tiny_corpus, tiny_pairs, tmp_path, overrides)
    trainer, model = fit(cfg)
    loader = trainer.datamodule.train_dataloader()
    runs = sum(len(batch) for batch in loader.sampler)
    assert len(loader) == -(-runs // 2) and trainer.global_step == len(loader)  # two runs of 3 a batch
    assert set(model.objective.decoders) == {"previous", "current", "next"}
    assert torch.isfinite(trainer.callback_metrics["val/loss"])


def test_nli_run_writes_test_results_of_the_best_checkpoint(tiny_corpus, tiny_pairs, tmp_path):
    cfg = compose_objective_cfg("nli", tiny_corpus, tiny_pairs, tmp_path,
                                ["encoder=bow", "trainer.max_epochs=2", *QUIET])
    value = train(cfg)
    import json

    results = json.loads((tmp_path / "test_results.json").read_text())
    assert results["kind"] == "test" and results["checkpoint"].endswith("best.ckpt")
    assert results == read_results(tmp_path / "test_results.json")  # the one schema
    assert results["encoder"]["output_dim"] > 0
    assert 0.0 <= results["results"]["test/snli_test/acc"]["main_score"] <= 1.0 and isinstance(value, float)


def test_mismatched_objective_and_data_fail_before_reading_data(tiny_corpus, tiny_pairs, tmp_path):
    cfg = compose_train_cfg(tiny_corpus, tmp_path, ["objective=nli", "data=books", *QUIET])
    with pytest.raises(ValueError, match="objective=nli consumes labelled_pairs batches but data=books yields "
                                         "sentences: use data=nli"):
        fit(cfg)


def test_two_vocabulary_checkpoint_reloads_and_refuses_another_target_vocabulary(tiny_corpus, tiny_pairs, tmp_path):
    cfg = compose_objective_cfg("nmt", tiny_corpus, tiny_pairs, tmp_path / "a",
                                ["encoder=bow", "trainer.max_epochs=1", *QUIET, *SMALL_DECODER])
    _, model = fit(cfg)
    last = tmp_path / "a" / "checkpoints" / "last.ckpt"
    loaded = SentenceModel.load_checkpoint(str(last), map_location="cpu")
    assert loaded.vocabs["target"].itos == model.vocabs["target"].itos
    assert loaded.vocabs["source"] is not loaded.vocabs["target"]
    sentences = ["The old man saw the river."]
    assert (loaded.encode(sentences) == model.encode(sentences)).all()
    other = compose_objective_cfg("nmt", tiny_corpus, tiny_pairs, tmp_path / "b",
                                  ["encoder=bow", "trainer.max_epochs=2", *QUIET, *SMALL_DECODER,
                                   "data.target_vocab_size=20", f"ckpt_path={last}"])
    with pytest.raises(ValueError, match="target vocabulary"):
        fit(other)



def test_encoders_stay_put_for_the_frozen_steps_then_learn_at_their_own_rate(tiny_corpus, tiny_pairs, tmp_path):
    cfg = compose_objective_cfg("autoencoder", tiny_corpus, tiny_pairs, tmp_path,
                                ["encoder=gru", "trainer.max_steps=4", "trainer.max_epochs=10", "data.batch_size=4",
                                 "trainer.num_sanity_val_steps=0", "trainer.val_check_interval=2",
                                 "model.encoder_frozen_steps=2", "model.encoder_lr_scale=0.25", *QUIET, *SMALL_DECODER,
                                 "+callbacks.snapshots._target_=tests.helpers.weight_snapshots.EncoderAndDecoderSnapshots"])
    trainer, model = fit(cfg)
    snapshots = next(c for c in trainer.callbacks if isinstance(c, EncoderAndDecoderSnapshots))
    groups = trainer.optimizers[0].param_groups
    assert [g["lr"] for g in groups] == [cfg.model.optimizer.lr, cfg.model.optimizer.lr * 0.25]
    assert {id(p) for p in groups[1]["params"]} == {id(p) for p in model.encoder_parameters()}
    assert len(snapshots.encoder) == 5  # before the first step, then after each of the 4
    assert torch.equal(snapshots.encoder[1], snapshots.encoder[0])
    assert torch.equal(snapshots.encoder[2], snapshots.encoder[0])
    assert not torch.equal(snapshots.encoder[3], snapshots.encoder[2])
    assert not torch.equal(snapshots.decoder[1], snapshots.decoder[0])
