"""The model folder a checkpoint of encoder=pretrained carries (sentence_lab.encoders.pretrained.carried): made again
where it was not, never through a link or a folder another user shaped, and a received file that names a folder or
package instead of carrying one is refused before anything is imported."""
from __future__ import annotations

import os

import pytest
import torch

from sentence_lab.encoders.pretrained.carried import carried_files, folder_from_files
from sentence_lab.text.refused_files import RefusedFile
from sentence_lab.training.inference import TrainedModel

FILES = {"config.json": '{"model_type": "bert"}', "tokenizer.json": "{}", "1_Pooling/config.json": "{}"}


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SENTENCE_LAB_MODEL_FOLDERS", str(tmp_path / "folders"))
    return tmp_path / "folders"


def test_the_carried_files_make_one_folder_named_by_their_content_and_remade_when_changed(tmp_path, home):
    folder = folder_from_files(FILES)
    assert folder.parent == home and carried_files(folder) == FILES
    assert folder_from_files(dict(FILES)) == folder  # the same content: the same folder, reused
    (folder / "config.json").write_text('{"model_type": "bert", "layer_norm_eps": 1.0}')  # tampered with
    assert folder_from_files(FILES) == folder and carried_files(folder) == FILES
    (folder / "tokenizer.json").unlink()
    (folder / "tokenizer.json").symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text("{}")
    assert folder_from_files(FILES) == folder and not (folder / "tokenizer.json").is_symlink()


def test_a_path_leaving_the_folder_and_a_home_that_is_a_link_are_refused(tmp_path, home, monkeypatch):
    with pytest.raises(ValueError, match="leaves its folder: refused"):
        folder_from_files({"../../escaped.json": "{}"})
    assert not (tmp_path / "escaped.json").exists()
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    monkeypatch.setenv("SENTENCE_LAB_MODEL_FOLDERS", str(tmp_path / "link"))
    with pytest.raises(ValueError, match="is a symbolic link"):
        folder_from_files(FILES)


def test_a_checkpoint_naming_a_package_instead_of_carrying_its_folder_is_refused_unimported(tmp_path, monkeypatch):
    marker = tmp_path / "imported"
    package = tmp_path / "code" / "evil_model_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "code"))
    settings = {"encoder": {"_target_": "sentence_lab.encoders.pretrained.encoder.PretrainedEncoder",
                            "model": "package:evil_model_pkg"},
                "objective": {"_target_": "sentence_lab.objectives.nli.NLI", "hidden_dim": 8},
                "tokenizers": {"source": {"kind": "treebank", "lowercase": True, "lang": "en"}}}
    path = tmp_path / "crafted.ckpt"
    torch.save({"hyper_parameters": settings, "state_dict": {},
                "vocabs": {"source": ["<pad>", "<unk>", "<s>", "</s>", "a"]}}, path)
    with pytest.raises(RefusedFile, match="come without the model folder's files"):
        TrainedModel.load_checkpoint(str(path), map_location="cpu")
    assert not marker.exists()
