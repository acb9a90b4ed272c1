"""Export a trained model as a sentence-transformers folder.

    python -m sentence_lab.adapters.export_st ckpt_path=<run dir or .ckpt> out=<dir> [vocab_expansion=false]
    sentence-lab-export-st ckpt_path=logs/train/runs/<run> out=exported/qt-books

Then, where ``sentence_lab`` is installed: ``sentence_lab.adapters.sentence_transformers.load_exported(out)``
(``SentenceTransformer(out, trust_remote_code=True)``, the folder checked first) ``.encode(sentences)`` gives the
vectors ``python evaluate.py ckpt_path=<run>`` scores (vocabulary expansion on by default, as there).
"""
from __future__ import annotations

import sys
from typing import cast

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from sentence_lab.adapters.trained import load_checkpoint_encoder

MISSING: str | None = None  # why the optional extra does not import, if it does not
try:
    from sentence_lab.adapters.sentence_transformers import export
except ImportError as missing:  # the optional extra
    MISSING = f"{missing}: pip install -r requirements-sentence-transformers.txt (sentence-transformers)"

DEFAULTS = {"ckpt_path": "???", "out": "???", "vocab_expansion": True}


def settings(argv: list[str]) -> dict:
    """``key=value`` arguments over ``DEFAULTS``; a missing or unknown key is a one-line ``SystemExit``."""
    try:
        given = OmegaConf.from_dotlist(argv)
    except OmegaConfBaseException as err:
        raise SystemExit(f"error: {err}; pass ckpt_path=<run dir or .ckpt> out=<dir>") from None
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise SystemExit(f"error: unknown setting {', '.join(unknown)}: use {', '.join(DEFAULTS)}")
    cfg = OmegaConf.merge(DEFAULTS, given)
    missing = [key for key in DEFAULTS if OmegaConf.is_missing(cfg, key)]
    if missing:
        raise SystemExit(f"error: {' and '.join(missing)} not given: pass ckpt_path=<run dir or .ckpt> out=<dir>")
    if OmegaConf.is_list(cfg.ckpt_path):
        raise SystemExit("error: ckpt_path is a list (combine-QT): export each checkpoint on its own; "
                         "sentence-transformers concatenates nothing, so evaluate the pair with evaluate.py")
    return cast(dict, OmegaConf.to_container(cfg))  # a DictConfig: a dict


def main(argv: list[str] | None = None) -> int:
    cfg = settings(list(sys.argv[1:] if argv is None else argv))
    if MISSING is not None:
        raise SystemExit(f"error: exporting needs sentence-transformers ({MISSING})")
    try:
        model, description = load_checkpoint_encoder(str(cfg["ckpt_path"]), bool(cfg["vocab_expansion"]))
        out = export(model, cfg["out"])
    except (FileNotFoundError, ValueError) as err:
        raise SystemExit(f"error: {err}") from None
    print(f"exported {description['source']} ({model.output_dim}-d, vocabulary expansion "
          f"{'on' if cfg['vocab_expansion'] else 'off'}) to {out}: "
          f"sentence_lab.adapters.sentence_transformers.load_exported({str(out)!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
