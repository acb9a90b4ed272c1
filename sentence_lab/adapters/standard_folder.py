"""A fine-tuned pre-trained encoder (``encoder=pretrained``) as a standard sentence-transformers folder: the
transformer's own ``config.json`` and ``model.safetensors``, its tokenizer's files, ``1_Pooling`` (and ``2_Normalize``
where the model normalises) and ``sentence_bert_config.json``: modules of sentence-transformers alone, so plain
``SentenceTransformer(folder)`` loads it, with no ``trust_remote_code`` and no code of this project."""
from __future__ import annotations

import json
from pathlib import Path

from sentence_lab.encoders.pretrained.encoder import PretrainedEncoder
from sentence_lab.training.inference import SentenceInference

# the model folder's files a standard folder copies as they are: the tokenizer's (the rest is written anew)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "merges.txt",
                   "vocab.json", "added_tokens.json")
LIBRARY = "sentence_transformers.models."


def single_pretrained_encoder(model: SentenceInference) -> PretrainedEncoder | None:
    """The one pre-trained encoder whose pooled vector is the model's whole vector (qt with a shared encoder, nli,
    the decoding objectives), else None (no pre-trained encoder, or QT's [f(s), g(s)] of two)."""
    found = list({id(m): m for m in model.modules() if isinstance(m, PretrainedEncoder)}.values())
    if len(found) == 1 and found[0].output_dim == model.output_dim:
        return found[0]
    return None


def write_standard_folder(encoder: PretrainedEncoder, out: Path) -> Path:
    """Write ``encoder`` (weights as they are now) as a sentence-transformers folder of its own modules."""
    out.mkdir(parents=True, exist_ok=True)
    encoder.model.save_pretrained(str(out), safe_serialization=True)
    for name, text in encoder.carried_files().items():
        if name in TOKENIZER_FILES:
            (out / name).write_text(text, encoding="utf-8")
    modules = [{"idx": 0, "name": "0", "path": "", "type": LIBRARY + "Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": LIBRARY + "Pooling"}]
    pooling = out / "1_Pooling"
    pooling.mkdir(exist_ok=True)
    (pooling / "config.json").write_text(json.dumps({
        "word_embedding_dimension": encoder.output_dim, "pooling_mode_cls_token": encoder.pooling == "cls",
        "pooling_mode_mean_tokens": encoder.pooling == "mean", "pooling_mode_max_tokens": encoder.pooling == "max",
        "pooling_mode_mean_sqrt_len_tokens": False}, indent=2), encoding="utf-8")
    if encoder.normalize:
        (out / "2_Normalize").mkdir(exist_ok=True)
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": LIBRARY + "Normalize"})
    (out / "modules.json").write_text(json.dumps(modules, indent=2), encoding="utf-8")
    (out / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": encoder.max_seq_length,
                                                               "do_lower_case": False}), encoding="utf-8")
    return out
