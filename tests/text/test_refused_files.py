"""What trust_remote_code=True may admit of a sentence-transformers folder (sentence_lab.text.refused_files)."""
from __future__ import annotations

import json

import pytest

from sentence_lab.text.refused_files import EXPORT_MODULE_CLASS, RefusedFile, check_module_classes


def _folder(tmp_path, *types: str):
    (tmp_path / "modules.json").write_text(json.dumps([{"idx": i, "name": str(i), "path": "", "type": t}
                                                       for i, t in enumerate(types)]))
    return tmp_path


def test_the_projects_export_and_sentence_transformers_modules_pass(tmp_path):
    check_module_classes(_folder(tmp_path, EXPORT_MODULE_CLASS, "sentence_transformers.models.Normalize"))
    bare = tmp_path / "bare"
    bare.mkdir()
    check_module_classes(bare)  # a folder without modules.json names no module class


@pytest.mark.parametrize("kind", ["evil.Module", "sentence_lab.evaluation.encoders.external.CallableEncoder",
                                  "sentence_transformersX.Module", None])
def test_any_other_module_class_is_refused_naming_it(tmp_path, kind):
    with pytest.raises(RefusedFile, match="modules.json: refused: it names the module class"):
        check_module_classes(_folder(tmp_path, EXPORT_MODULE_CLASS, kind))


def test_shipped_code_in_an_auto_map_is_refused(tmp_path):
    _folder(tmp_path, "sentence_transformers.models.Transformer")
    (tmp_path / "config.json").write_text(json.dumps({"auto_map": {"AutoModel": "modeling_evil.Model"}}))
    with pytest.raises(RefusedFile, match="auto_map"):
        check_module_classes(tmp_path)


def test_trust_is_for_a_local_folder_only(tmp_path):
    with pytest.raises(RefusedFile, match="local folder"):
        check_module_classes(tmp_path / "org--model-name")
