"""The one error for a received file that holds code where the project reads data, and the check of a
sentence-transformers folder's module classes (what ``trust_remote_code=True`` would import). docs/trust.md."""
from __future__ import annotations

import json
from pathlib import Path

# The module class of the folders sentence_lab.adapters.sentence_transformers.export writes.
EXPORT_MODULE_CLASS = "sentence_lab.adapters.sentence_transformers.SentenceLabModule"
# sentence-transformers' own module classes (Transformer, Pooling, Normalize, ...), which its own code defines.
LIBRARY_MODULES = "sentence_transformers."


class RefusedFile(ValueError):
    """A received file holds code where the project reads data; nothing was built from it."""


def check_module_classes(folder: str | Path) -> None:
    """``RefusedFile`` unless the ``modules.json`` of a sentence-transformers folder names only this project's export
    module and sentence-transformers' own modules: ``trust_remote_code=True`` then admits nothing else. A folder
    without ``modules.json`` (a bare Hugging Face model) names no module class. A ``config.json`` with an
    ``auto_map`` (Hugging Face's code shipped in the folder, which the flag would run too) is refused as well."""
    folder = Path(folder)
    if not folder.is_dir():
        raise RefusedFile(f"{folder}: trust_remote_code=True is for a local folder written by "
                          "sentence_lab.adapters.export_st, checked before loading: this is not one")
    for config in sorted([*folder.glob("config.json"), *folder.glob("*/config.json")]):  # the folder, its modules
        try:
            mapped = "auto_map" in json.loads(config.read_text(encoding="utf-8"))
        except (OSError, ValueError, TypeError):
            mapped = False
        if mapped:
            raise RefusedFile(f"{config}: refused: its auto_map names Python code shipped in the folder, which "
                              "trust_remote_code=True would run (docs/trust.md): load it without trust_remote_code")
    modules = folder / "modules.json"
    if not modules.is_file():
        return
    try:
        listed = json.loads(modules.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise RefusedFile(f"{modules}: unreadable ({err}): export the model again") from None
    for entry in listed if isinstance(listed, list) else [listed]:
        kind = entry.get("type") if isinstance(entry, dict) else entry
        if kind != EXPORT_MODULE_CLASS and not (isinstance(kind, str) and kind.startswith(LIBRARY_MODULES)):
            raise RefusedFile(f"{modules}: refused: it names the module class {kind!r}, which trust_remote_code=True "
                              f"would import and run (docs/trust.md): only {EXPORT_MODULE_CLASS} and "
                              "sentence-transformers' own modules are loaded")
