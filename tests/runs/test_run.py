"""train.py end to end on a tiny corpus: every encoder, checkpoints, resume, every config."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra.utils import instantiate
from lightning import LightningModule
from omegaconf import DictConfig, OmegaConf

import sentence_lab
from sentence_lab.runs.model_text import reads_model_tokenizer
from sentence_lab.runs.run import check_encoder_config, fit
from sentence_lab.text import Vocab
from sentence_lab.text.model_folders import checked_model_folder
from sentence_lab.text.subword import tokenizer_vocab
from sentence_lab.training.inference import TrainedModel
from sentence_lab.training.module import SentenceModel
from tests.helpers import processes
from tests.helpers.extras import skip_when_an_extra_is_missing
from tests.helpers.train_config import compose_any_cfg, compose_train_cfg, is_text_encoder_config

pytestmark = pytest.mark.slow  # end-to-end: outside the fast tier (-m "not slow")

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
TRAINABLE = sorted(p.stem for p in (CONF / "encoder").glob("*.yaml")  # paper-sized ones: too big
                   if not re.search(r"_[a-z]+\d{4}$", p.stem) and not is_text_encoder_config(p.stem))
SENTENCES = ["The old man saw the river.", "A dog ran", "the cat sat under a red tree with the young woman ."]


make_cfg = compose_train_cfg


def readme_python_snippet() -> str:
    """The README's code under "## From Python", as a reader copies it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"```python\n(.*?)\n```", text[text.index("## From Python"):], re.S)
    assert found is not None, 'no ```python block under "## From Python" in README.md'
    return found.group(1)


SMALL = ["encoder=bilstm_max", "encoder.embed_dim=16", "encoder.hidden_dim=16", "encoder.embedding_init=random",
         "encoder.freeze_embeddings=false", "trainer.val_check_interval=1.0", "logger=none",
         "callbacks=default", "~callbacks.rich_progress_bar", "~callbacks.model_summary"]


SECOND_PART_ENCODERS = ("transformer", "pretrained")  # a transformer trained: CI's second part


@pytest.mark.parametrize("encoder", [pytest.param(e, marks=pytest.mark.second_part) if e in SECOND_PART_ENCODERS
                                     else e for e in TRAINABLE])
def test_fast_dev_run_trains_every_encoder(encoder, tiny_corpus, tmp_path):
    cfg = make_cfg(tiny_corpus, tmp_path, [f"encoder={encoder}", "++trainer.fast_dev_run=true", "logger=none"])
    trainer, model = fit(cfg)
    assert trainer.state.finished
    assert torch.isfinite(trainer.callback_metrics["train/loss_epoch"])
    emb = model.encode(SENTENCES)
    assert emb.shape == (3, model.output_dim) and emb.dtype == "float32"


def test_checkpoint_reloads_with_vocabulary_and_gives_same_embeddings(tiny_corpus, tmp_path):
    cfg = make_cfg(tiny_corpus, tmp_path, SMALL + ["trainer.max_epochs=1"])
    _, model = fit(cfg)
    ckpts = sorted((tmp_path / "checkpoints").glob("*.ckpt"))
    assert [p.name for p in ckpts] == ["best.ckpt", "init.ckpt", "last.ckpt"]  # every epoch's: epoch_checkpoints
    loaded = SentenceModel.load_checkpoint(str(tmp_path / "checkpoints" / "last.ckpt"), map_location="cpu")
    assert loaded.vocab.itos == model.vocab.itos and loaded.tokenizer == model.tokenizer
    torch.testing.assert_close(torch.from_numpy(loaded.encode(SENTENCES)),
                               torch.from_numpy(model.cpu().encode(SENTENCES)), rtol=0, atol=1e-6)
    # the front door: sentence_lab.load_model on the run directory (its best checkpoint), no Lightning in its type
    public = sentence_lab.load_model(tmp_path, device="cpu")
    assert isinstance(public, TrainedModel) and not isinstance(public, LightningModule)
    np.testing.assert_array_equal(public.encode(SENTENCES), SentenceModel.load_checkpoint(
        str(tmp_path / "checkpoints" / "best.ckpt"), map_location="cpu").encode(SENTENCES))
    # ...and the README's snippet, run as written on this run directory
    snippet = readme_python_snippet()
    assert "sentence_lab.load_model(" in snippet and len(snippet.splitlines()) <= 5
    scope: dict = {}
    exec(snippet.replace("logs/train/runs/<run>", str(tmp_path)), scope)  # noqa: S102 (the README's own code)
    assert scope["vectors"].shape == (2, public.output_dim)


def test_two_epochs_equal_one_epoch_then_resume(tiny_corpus, tmp_path):
    _, straight = fit(make_cfg(tiny_corpus, tmp_path / "a", SMALL + ["trainer.max_epochs=2"]))
    fit(make_cfg(tiny_corpus, tmp_path / "b",
                 SMALL + ["trainer.max_epochs=1", "callbacks=[default,epoch_checkpoints]"]))
    last = tmp_path / "b" / "checkpoints" / "last.ckpt"
    _, resumed = fit(make_cfg(tiny_corpus, tmp_path / "b", SMALL + ["trainer.max_epochs=2", f"ckpt_path={last}"]))
    a, b = straight.state_dict(), resumed.state_dict()
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
    # ...and training did move the weights.
    first = torch.load(tmp_path / "b" / "checkpoints" / "epoch_000.ckpt", weights_only=False)["state_dict"]
    assert any(not torch.equal(first[k], b[k].cpu()) for k in first)


def _options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


@pytest.mark.parametrize("group,option", [(g, o) for g in ("encoder", "objective", "data", "trainer", "logger",
                                                          "callbacks", "experiment") for o in _options(g)])
def test_every_config_composes_and_instantiates(group, option, tiny_corpus, tmp_path):
    # the opt-in callback configs go next to the defaults, as the docs show
    selection = f"[default,{option}]" if group == "callbacks" and option not in ("default", "none") else option
    cfg = compose_any_cfg(tiny_corpus, tmp_path, [f"{group}={selection}"])
    with skip_when_an_extra_is_missing():  # an optional extra a config needs, absent here: skipped naming it
        _instantiate_what_the_group_builds(group, cfg)


def _instantiate_what_the_group_builds(group: str, cfg: DictConfig) -> None:
    """Build what a composed config of ``group`` describes, as train.py or evaluate.py would."""
    if group == "encoder":
        if reads_model_tokenizer(cfg.encoder):  # a pre-trained model reads its own tokenizer's vocabulary
            vocab = tokenizer_vocab(str(checked_model_folder(str(cfg.encoder.model))))
            obj = instantiate(cfg.encoder, _partial_=True)(vocab=vocab)
        elif str(cfg.encoder._target_).startswith("sentence_lab.encoders."):
            obj = instantiate(cfg.encoder, _partial_=True)(vocab=Vocab(["<pad>", "<unk>", "<s>", "</s>", "a"]))
        else:  # an evaluation-side text encoder (bow_glove, length, minilm...): no vocabulary argument
            missing = OmegaConf.missing_keys(cfg.encoder)
            if missing:  # a file or function the user must name: composing is what can be checked
                assert {k.split(".")[-1] for k in missing} <= {"path", "function", "model"}, missing
                return
            obj = instantiate(cfg.encoder)
        assert obj is not None
    elif group == "objective":
        words = ["<pad>", "<unk>", "<s>", "</s>", "a"]
        model = SentenceModel(encoder=cfg.encoder, objective=cfg.objective, vocabs={"source": words, "target": words},
                              optimizer=cfg.model.optimizer)
        assert model.output_dim > 0
    elif group == "trainer":
        if cfg.trainer.accelerator == "gpu" and not torch.cuda.is_available():
            pytest.skip("no GPU here: the gpu trainer config composes but cannot be instantiated")
        assert instantiate(cfg.trainer) is not None
    elif group in ("logger", "callbacks"):
        for entry in (cfg.get(group) or {}).values():
            assert instantiate(entry) is not None
    else:  # data, experiment: the composed datamodule config instantiates
        assert instantiate(cfg.data).batch_size > 0


def test_a_baseline_that_cannot_be_trained_is_a_clear_error():
    cfg = DictConfig({"encoder": {"_target_": "sentence_lab.evaluation.encoders.baselines.BowGloveEncoder"}})
    with pytest.raises(ValueError, match="bilstm_max"):
        check_encoder_config(cfg)


def test_train_py_runs_from_the_command_line(tiny_corpus, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, str(ROOT / "train.py"), "++trainer.fast_dev_run=true", "encoder=bow",
           f"data.train_dir={tiny_corpus / 'train'}", f"data.valid_dir={tiny_corpus / 'valid'}",
           f"paths.cache_dir={tmp_path / 'cache'}", f"paths.log_dir={tmp_path / 'logs'}", "data.batch_size=8"]
    done = processes.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert list((tmp_path / "logs" / "train" / "runs").iterdir())


def test_logged_epoch_metrics_are_batch_weighted_means(tiny_corpus, tmp_path):
    cfg = make_cfg(tiny_corpus, tmp_path, SMALL + ["trainer.max_epochs=1", "trainer.log_every_n_steps=2",
                                                   "trainer.num_sanity_val_steps=0"])
    trainer, model = fit(cfg)
    metrics = trainer.callback_metrics
    assert ({"train/loss_step", "train/loss_epoch", "train/context_acc_epoch", "val/loss", "val/context_acc"}
            <= set(metrics))
    # Recompute the validation loss by hand over the validation batches.
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for batch in trainer.datamodule.val_dataloader():
            n = int(batch["lengths"].shape[0])
            total += model.objective(batch)["loss"].item() * n
            count += n
    assert metrics["val/loss"].item() == pytest.approx(total / count, rel=1e-5)
