"""A trained model as a sentence-transformers module: ``SentenceTransformer(folder, trust_remote_code=True)``.

The folder ``export`` writes holds ``modules.json`` (one module, this class), ``sentence_lab.json`` (the model's
hyper-parameters, vocabularies, tokenizer settings and the words vocabulary expansion added) and
``model.safetensors`` (the weights, with the expansion's extra rows of each word table). sentence-transformers 6
imports a module class from outside its own package only with ``trust_remote_code=True``; the class is this one,
so ``sentence_lab`` must be installed where the folder is loaded.

What ``trust_remote_code=True`` admits for such a folder: the class ``modules.json`` names is imported and its
``load`` runs. This class reads ``sentence_lab.json`` as JSON and ``model.safetensors`` as tensors, and builds only
the classes of the allow-list in ``sentence_lab.checkpoints.received`` (anything else is refused before an import). The
flag itself admits any class a folder names, so a received folder is loaded with ``load_exported``, which first
checks that its ``modules.json`` names this class or sentence-transformers' own (docs/trust.md).

The word-vocabulary encoders map onto no module of sentence-transformers: every one reads Moses or Treebank tokens
(``text.Tokenizer``), which no ``tokenizers`` pipeline reproduces, so each such export carries this module. A
fine-tuned pre-trained encoder (``encoder=pretrained``) does map onto them, and exports as a standard folder
(``sentence_lab.adapters.standard_folder``): no module of ours, no ``trust_remote_code``.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import InputModule

from sentence_lab.adapters.standard_folder import single_pretrained_encoder, write_standard_folder
from sentence_lab.checkpoints.non_finite_weights import refuse_non_finite
from sentence_lab.checkpoints.received import check_saved_targets
from sentence_lab.encoders.embedding import WordEmbedding
from sentence_lab.encoders.pretrained.encoder import PretrainedEncoder, reading_carried_folder
from sentence_lab.text import Vocab
from sentence_lab.text.padding import pad_batch
from sentence_lab.text.refused_files import check_module_classes
from sentence_lab.training.inference import SentenceInference, TrainedModel

CONFIG_FILE = "sentence_lab.json"
WEIGHTS_FILE = "model.safetensors"
EXTRA_ROWS = "expansion_rows."
FORMAT_VERSION = 1


def word_tables(model: SentenceInference) -> dict[str, WordEmbedding]:
    """The model's word tables by module name (where vocabulary expansion adds rows)."""
    return {name: module for name, module in model.named_modules() if isinstance(module, WordEmbedding)}


class SentenceLabModule(InputModule):
    """A trained model (``SentenceInference``) inside sentence-transformers: ``preprocess`` tokenises raw text as the
    model was trained to (its tokenizer and vocabulary, expanded or not as exported) and ``forward`` returns its
    ``embed``."""

    save_in_root = True

    def __init__(self, model: SentenceInference) -> None:
        super().__init__()
        self.model = model.eval()

    @property
    def tokenizer(self):  # sentence-transformers reads it; ours is no Hugging Face tokenizer
        return None

    @property
    def max_seq_length(self) -> int | None:
        return None

    def get_embedding_dimension(self) -> int:
        return self.model.output_dim

    get_sentence_embedding_dimension = get_embedding_dimension

    def preprocess(self, inputs: Sequence[str], prompt: str | None = None, **kwargs) -> dict[str, torch.Tensor]:
        texts = [(prompt or "") + text for text in inputs]
        tokens, lengths = pad_batch([self.model.token_ids(text) for text in texts])
        return {"input_ids": tokens, "lengths": lengths}

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        tokens, lengths = features["input_ids"], features["lengths"]
        features["sentence_embedding"] = self.model.embedder.embed(tokens.to(self.model.device), lengths.cpu())
        return features

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        out = Path(output_path)
        model = self.model
        config = {"format_version": FORMAT_VERSION, "hyper_parameters": dict(model.hparams),
                  "vocabs": {side: list(v.itos) for side, v in model.vocabs.items()},
                  "encode_vocab_added": list(model.encode_vocab.itos[len(model.vocab):]),
                  "vocabulary_expansion": model.expansion}
        (out / CONFIG_FILE).write_text(json.dumps(config), encoding="utf-8")
        # Weights only: an objective's extra state (J_bi's noise generator) serves training, not encoding.
        tensors = {key: value.detach().cpu().contiguous() for key, value in model.state_dict().items()
                   if torch.is_tensor(value)}
        for name, table in word_tables(model).items():
            if table.extra_rows.numel():
                tensors[EXTRA_ROWS + name] = table.extra_rows.detach().cpu().contiguous()
        save_file(_unshared(tensors), str(out / WEIGHTS_FILE))

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", token: bool | str | None = None,
             cache_folder: str | None = None, revision: str | None = None, local_files_only: bool = False,
             **kwargs) -> SentenceLabModule:
        files = {name: cls.load_file_path(model_name_or_path, name, subfolder=subfolder, token=token,
                                          cache_folder=cache_folder, revision=revision,
                                          local_files_only=local_files_only) for name in (CONFIG_FILE, WEIGHTS_FILE)}
        missing = [name for name, path in files.items() if path is None]
        if missing:
            raise FileNotFoundError(f"{model_name_or_path}: no {', '.join(missing)}; export the model again with "
                                    "python -m sentence_lab.adapters.export_st")
        config = json.loads(Path(files[CONFIG_FILE]).read_text(encoding="utf-8"))
        if config.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"{model_name_or_path}: export format {config.get('format_version')}, this sentence_lab "
                             f"reads {FORMAT_VERSION}; export it again with this version")
        settings = config.get("hyper_parameters")
        if not isinstance(settings, dict):
            raise ValueError(f"{model_name_or_path}: {CONFIG_FILE} holds no hyper_parameters; export the model again")
        check_saved_targets(settings, f"{model_name_or_path}/{CONFIG_FILE}")  # classes of the allow-list only
        # a pre-trained encoder exports as a standard folder, never as this module: such settings are refused
        settings = reading_carried_folder(settings, None, f"{model_name_or_path}/{CONFIG_FILE}")
        model = TrainedModel(vocabs=config["vocabs"], **settings)
        tensors = load_file(files[WEIGHTS_FILE])
        extra = {key[len(EXTRA_ROWS):]: tensors.pop(key) for key in list(tensors) if key.startswith(EXTRA_ROWS)}
        missing, unexpected = model.load_state_dict(tensors, strict=False)
        wrong = [k for k in missing if not k.endswith("_extra_state")] + list(unexpected)
        if wrong:
            raise ValueError(f"{model_name_or_path}: {WEIGHTS_FILE} does not match the model its {CONFIG_FILE} "
                             f"describes ({', '.join(wrong[:3])}); export the model again")
        for name, table in word_tables(model).items():
            if name in extra:
                table.set_extra_rows(extra[name])
        if config["encode_vocab_added"]:
            model.encode_vocab = Vocab(list(model.vocab.itos) + list(config["encode_vocab_added"]))
        model.expansion = config.get("vocabulary_expansion")
        return cls(model)


def load_exported(folder: str | Path, **kwargs: Any) -> SentenceTransformer:
    """``SentenceTransformer(folder, trust_remote_code=True)`` for a folder ``export`` wrote, once its
    ``modules.json`` names this module class only (or sentence-transformers' own modules): the flag then admits
    nothing else. Any other class is refused in one line (``RefusedFile``) before anything is imported."""
    check_module_classes(folder)
    return SentenceTransformer(str(folder), trust_remote_code=True, **kwargs)


def _unshared(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """safetensors refuses tensors that share memory (tied weights): give each its own copy."""
    seen: set[int] = set()
    out = {}
    for key, value in tensors.items():
        pointer = value.untyped_storage().data_ptr()
        out[key] = value.clone() if pointer in seen else value
        seen.add(pointer)
    return out


def export(model: SentenceInference, out: str | Path) -> Path:
    """Write ``model`` (as it encodes now: with or without vocabulary expansion) as a sentence-transformers folder:
    a fine-tuned pre-trained encoder whose vector is the model's as a standard folder of sentence-transformers' own
    modules (``standard_folder``), any other model through ``SentenceLabModule``. Weights holding NaN or inf are
    refused (``NonFiniteWeights``) before anything is written; so is a model of pre-trained encoders whose vector
    joins two of them (QT's [f(s), g(s)]), which no standard folder holds."""
    refuse_non_finite(model.state_dict(), f"export to {out}")
    pretrained = single_pretrained_encoder(model)
    if pretrained is not None:
        return write_standard_folder(pretrained, Path(out))
    if any(isinstance(m, PretrainedEncoder) for m in model.modules()):
        raise ValueError("the model's vector joins two pre-trained encoders (QT's [f(s), g(s)]), which no "
                         "sentence-transformers folder holds: train with objective.shared_encoder=true to export it")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    SentenceTransformer(modules=[SentenceLabModule(model)], device=str(model.device)).save(str(out))
    return out
