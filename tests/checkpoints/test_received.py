"""Checkpoints and saved settings from others are read as data (sentence_lab.checkpoints.received)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from sentence_lab.checkpoints.received import check_saved_targets, read_checkpoint
from sentence_lab.runs.run import fit
from sentence_lab.text.refused_files import RefusedFile
from sentence_lab.training.module import SentenceModel
from tests.helpers.hostile_files import with_payload, with_settings
from tests.helpers.train_config import compose_train_cfg

ROOT = Path(__file__).resolve().parents[2]
QUIET = ["logger=none", "~callbacks.rich_progress_bar", "~callbacks.model_summary", "encoder=bow",
         "encoder.embed_dim=8", "encoder.embedding_init=random", "trainer.max_epochs=1"]


@pytest.fixture(scope="module")
def run(tiny_corpus, tmp_path_factory) -> Path:
    """A real run of this project: init, best and last checkpoints."""
    out = tmp_path_factory.mktemp("run")
    fit(compose_train_cfg(tiny_corpus, out, QUIET))
    return out


def test_this_projects_checkpoints_load_as_data_as_they_are(run):
    for name in ("init.ckpt", "best.ckpt", "last.ckpt"):
        state = read_checkpoint(run / "checkpoints" / name)
        assert {"state_dict", "hyper_parameters", "vocabs", "rng_states", "callbacks"} <= set(state)
    model = SentenceModel.load_checkpoint(str(run / "checkpoints" / "last.ckpt"), map_location="cpu")
    assert model.encode(["the cat sat ."]).shape == (1, model.output_dim)


def test_a_pickle_payload_is_refused_naming_the_file_and_the_type_and_never_runs(run, tmp_path):
    marker = tmp_path / "ran"
    bad = with_payload(run / "checkpoints" / "last.ckpt", tmp_path / "gift.ckpt", marker)
    torch.load(bad, weights_only=False)  # the payload is real: unpickled as code it runs
    assert marker.exists()
    marker.unlink()
    for read in (lambda: read_checkpoint(bad), lambda: SentenceModel.load_checkpoint(str(bad))):
        with pytest.raises(RefusedFile, match=r"gift\.ckpt: refused: it holds getattr, which is code"):
            read()
    assert not marker.exists()


def test_a_file_that_is_no_dict_is_not_a_checkpoint(tmp_path):
    torch.save([torch.zeros(2)], tmp_path / "list.ckpt")
    with pytest.raises(RefusedFile, match="not a checkpoint"):
        read_checkpoint(tmp_path / "list.ckpt")


ENCODER = {"_target_": "sentence_lab.encoders.bow.BagOfWordsEncoder", "embed_dim": 8}


@pytest.mark.parametrize("settings, place", [
    ({"encoder": {**ENCODER, "x": {"_target_": "builtins.open", "_args_": ["f", "w"]}}}, "encoder.x"),
    ({"encoder": {"_target_": "builtins.open"}}, "encoder"),
    ({"encoder": {"_target_": "sentence_lab.evaluation.encoders.external.CallableEncoder", "function": "os:system"}},
     "encoder"),
    ({"encoder": {"_target_": "sentence_lab.encoders.bow.np"}}, "encoder"),  # a module imported into ours
    ({"encoder": {"_target_": "sentence_lab.encoders.base.importlib.import_module"}}, "encoder"),
    ({"encoder": ENCODER, "objective": {"_target_": "sentence_lab.objectives.nli.instantiate"}}, "objective"),
    ({"encoder": ENCODER, "objective": {"_target_": "numpy.load", "allow_pickle": True}}, "objective"),
    ({"encoder": ENCODER, "optimizer": {"_target_": "torch.optim.lr_scheduler.LambdaLR"}}, "optimizer"),
    ({"encoder": ENCODER, "scheduler": {"_target_": "builtins.eval"}}, "scheduler"),
    ({"encoder": ENCODER, "tokenizers": {"source": {"_target_": "os.system"}}}, "tokenizers.source"),
    ({"encoder": {"_target_": "sentence_lab.encoders.multichannel.MultiChannelEncoder",
                  "channels": {"a": {**ENCODER, "w": {"_target_": "builtins.open"}}}}}, "encoder.channels.a.w"),
    ({"encoder": {"_target_": "sentence_lab.encoders.multichannel.MultiChannelEncoder",
                  "channels": {"a": {"_target_": "sentence_lab.adapters.sentence_transformers.SentenceLabModule"}}}},
     "encoder.channels.a"),
    ({"encoder": {**ENCODER, "channels": {"a": ENCODER}}}, "encoder.channels.a"),  # nested only under multichannel
])
def test_a_target_off_the_allow_list_is_refused_naming_its_place(settings, place):
    with pytest.raises(RefusedFile, match=rf"gift: refused: its saved setting {place}\._target_="):
        check_saved_targets(settings, "gift")


def _targets(group: str) -> list[dict]:
    configs = [OmegaConf.to_container(OmegaConf.load(p)) for p in sorted((ROOT / "conf" / group).glob("*.yaml"))]
    return [c for c in configs if isinstance(c, dict) and "_target_" in c]


def test_every_shipped_trainable_encoder_objective_optimiser_and_schedule_is_allowed():
    trainable = [c for c in _targets("encoder") if c["_target_"].startswith("sentence_lab.encoders.")]
    assert len(trainable) >= 6 and any("channels" in c for c in trainable)
    for encoder in trainable:
        check_saved_targets({"encoder": encoder}, "ours")
    objectives = _targets("objective")
    assert len(objectives) == 8
    for objective in objectives:
        check_saved_targets({"encoder": ENCODER, "objective": objective, "scheduler": {
            "_target_": "sentence_lab.training.schedules.warmup_linear_decay"},
            "optimizer": {"_target_": "torch.optim.Adam", "lr": 0.1}}, "ours")


def test_nested_target_in_a_received_checkpoint_creates_no_file(run, tmp_path):
    made = tmp_path / "made-by-sender"
    encoder = read_checkpoint(run / "checkpoints" / "last.ckpt")["hyper_parameters"]["encoder"]
    bad = with_settings(run / "checkpoints" / "last.ckpt", tmp_path / "gift.ckpt",
                        {"encoder": {**encoder, "extra": {"_target_": "builtins.open", "_args_": [str(made), "w"]}}})
    with pytest.raises(RefusedFile, match=r"encoder\.extra\._target_='builtins\.open'"):
        SentenceModel.load_checkpoint(str(bad))
    assert not made.exists()
