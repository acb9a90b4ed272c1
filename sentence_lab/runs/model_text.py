"""A run of ``encoder=pretrained`` reads every text through its model's own tokenizer: the data's tokenizer settings
are pointed at the model folder before the data is built (the training corpus; the evaluation suite and probing
sets read text through the model, which carries that tokenizer)."""
from __future__ import annotations

from omegaconf import DictConfig, open_dict

from sentence_lab.encoders.base import encoder_class
from sentence_lab.encoders.pretrained.encoder import PretrainedEncoder
from sentence_lab.text.model_folders import checked_model_folder


def reads_model_tokenizer(encoder: DictConfig) -> bool:
    """Whether ``encoder`` is a pre-trained model's (``encoder=pretrained``)."""
    target = encoder.get("_target_") if isinstance(encoder, DictConfig) else None
    return bool(target) and issubclass(encoder_class(str(target)), PretrainedEncoder)


def adopt_model_tokenizer(cfg: DictConfig) -> None:
    """``encoder=pretrained``: the data's (source side's) tokenizer becomes the model's: a corpus module's
    ``tokenizer=huggingface tokenizer_model=<folder> lowercase=false``, a pairs module's ``tokenizer`` mapping (its
    ``target_tokenizer``, when it names one, stays: nmt's decoder keeps its own vocabulary). Nothing for other
    encoders; the same again changes nothing."""
    if not reads_model_tokenizer(cfg.encoder):
        return
    folder = str(checked_model_folder(str(cfg.encoder.model), weights=bool(cfg.encoder.get("load_weights", True))))
    data = cfg.data
    with open_dict(data):
        if "tokenizer_model" in data or isinstance(data.get("tokenizer"), str):
            data.tokenizer, data.tokenizer_model, data.lowercase = "huggingface", folder, False
            return
        source = data.get("tokenizer")
        if "target_tokenizer" in data and data.get("target_tokenizer") is None and not data.get("shared_vocab", True):
            data.target_tokenizer = source if source is not None else {}  # a second vocabulary keeps its words
        data.tokenizer = {"kind": "huggingface", "lowercase": False, "lang": "en", "model": folder}
