"""What a trained model does for its users: load from a checkpoint, map sentences to vectors (``encode``), widen the
vocabulary (``expand_vocabulary``), hand its second language's encoder to the evaluation (``in_language``) and
describe itself. ``SentenceInference`` builds the model's parts and reads them; ``TrainedModel`` is it alone, a plain
``nn.Module`` (what evaluation, the exports and the untrained baselines load: no Lightning); ``SentenceModel``
(``sentence_lab.training.module``) is it with the training, a ``LightningModule``. Both hold the same modules under
the same names, so each reads the other's weights."""
from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any, TypeVar, cast

import numpy as np
import torch
from hydra.utils import instantiate
from torch import nn

from sentence_lab.checkpoints.legacy import UNRECORDED_TOKENIZER, namespaced_targets, saved_vocabs
from sentence_lab.checkpoints.received import check_saved_targets, read_checkpoint
from sentence_lab.encoders.base import NoLayers, SentenceEncoder
from sentence_lab.encoders.embedding import WordEmbedding
from sentence_lab.encoders.expansion import expand_embeddings
from sentence_lab.encoders.pretrained.encoder import PretrainedEncoder, reading_carried_folder
from sentence_lab.objectives.contract import Embeds, EmbedsTargetSide, SentenceObjective
from sentence_lab.text import UNK_ID, Tokenizer, Vocab
from sentence_lab.text.config_values import plain
from sentence_lab.text.padding import pad_batch

log = logging.getLogger(__name__)

Model = TypeVar("Model", bound="SentenceInference")
MODEL_FOLDER_KEY = "model_folder_files"  # a checkpoint's copy of a pre-trained encoder's configs and tokenizer


@lru_cache(maxsize=1 << 17)
def _cached_tokens(tokenizer: Tokenizer, sentence: str) -> tuple[str, ...]:
    """Recently tokenised sentences: the suite encodes a task's sentences, then asks their OOV rate."""
    return tuple(tokenizer(sentence))


def unknown_share(token_ids: Callable[[str], list[int]], sentences: list[str]) -> float:
    """Share of the tokens of ``sentences`` that ``token_ids`` maps to ``<unk>``."""
    total = unknown = 0
    for s in sentences:
        ids = token_ids(s)
        total += len(ids)
        unknown += sum(1 for i in ids if i == UNK_ID)
    return unknown / max(total, 1)


class EncoderOnly(SentenceObjective):
    """No training objective: the embedding is the encoder's output (untrained baselines)."""

    def __init__(self, encoder_factory) -> None:
        super().__init__()
        self.f: SentenceEncoder = encoder_factory()
        self.output_dim = self.f.output_dim

    def embed(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.f(tokens, lengths)


class SentenceInference(nn.Module):
    """The inference half of ``SentenceModel`` and the whole of ``TrainedModel``: the parts every model has
    (``_build_parts``) and everything that reads them; none of it trains."""

    vocab: Vocab
    encode_vocab: Vocab
    expansion: dict | None
    tokenizer: Tokenizer
    vocabs: dict[str, Vocab]
    tokenizers: dict[str, Tokenizer]
    objective: nn.Module
    _source_encoders: list[SentenceEncoder]
    hparams: Any
    _remembered_tokens: dict[str, tuple[str, ...]] | None = None

    def _build_parts(self, encoder: Any, objective: Any, vocabs: Mapping[str, Vocab | list[str]] | None,
                     tokenizers: Mapping[str, dict] | None, vocab: Vocab | list[str] | None = None,
                     tokenizer: dict | None = None, **training: Any) -> dict[str, Any]:
        """Build the vocabularies, tokenizers, objective and encoders from the model's settings (``SentenceModel``'s
        arguments) and return those settings as plain values: what a checkpoint keeps as ``hyper_parameters``.
        ``training``: the settings only training reads (optimiser, schedule, ...), kept as given."""
        encoder, objective = plain(encoder), plain(objective)
        given: dict[str, Vocab | list[str] | None] = dict(vocabs) if vocabs is not None else {"source": vocab}
        if given.get("source") is None:
            raise ValueError("SentenceModel needs a source vocabulary (vocabs={'source': ...})")
        tokenizers = plain(tokenizers) or {"source": plain(tokenizer) or dict(UNRECORDED_TOKENIZER)}
        settings = {"encoder": encoder, "objective": objective, "tokenizers": tokenizers,
                    **{key: plain(value) for key, value in training.items()}}
        for key, kind in (("encoder_lr_scale", float), ("encoder_frozen_steps", int)):
            if key in settings:
                settings[key] = kind(settings[key])
        self.vocabs = {}
        for side, v in given.items():
            if v is None:
                raise ValueError(f"SentenceModel got no {side} vocabulary (vocabs={{'{side}': None}})")
            words = v.itos if isinstance(v, Vocab) else list(v)
            shared = [known for known in self.vocabs.values() if known.itos == words]
            # a vocabulary shared by both sides (NLI, paraphrases) stays one object
            self.vocabs[side] = v if isinstance(v, Vocab) else (shared[0] if shared else Vocab(words))
        self.vocab = self.vocabs["source"]
        # The vocabulary ``encode`` uses: ``vocab``, or ``vocab`` plus the words expansion added.
        self.encode_vocab = self.vocab
        self.expansion = None
        self.tokenizers = {side: Tokenizer(**t) for side, t in tokenizers.items()}
        self.tokenizer = self.tokenizers["source"]
        # Encoders over the source vocabulary: what ``embed`` reads and vocabulary expansion maps into.
        self._source_encoders = []

        def encoder_factory(side: str = "source") -> SentenceEncoder:
            # Built through a partial: Hydra would turn a dataclass argument into a config.
            built = instantiate(encoder, _partial_=True)(vocab=self.vocabs[side])
            if side == "source":
                self._source_encoders.append(built)
            return built

        if objective is None:
            self.objective = EncoderOnly(encoder_factory)
        else:
            self.objective = instantiate(objective, _partial_=True)(encoder_factory=encoder_factory,
                                                                    vocabs=self.vocabs)
        return settings

    def model_folder_files(self) -> dict[str, str]:
        """The configs and tokenizer of the pre-trained model the encoders were loaded from (``encoder=pretrained``),
        which a checkpoint carries; empty for other encoders."""
        return next((m.carried_files() for m in self._source_encoders if isinstance(m, PretrainedEncoder)), {})

    @property
    def embedder(self) -> Embeds:
        """The objective as what it gives at test time (every objective embeds; ``objectives/contract.py``)."""
        return cast(Embeds, self.objective)

    @property
    def output_dim(self) -> int:
        """The width of the vectors ``encode`` returns."""
        return int(self.embedder.output_dim)

    @classmethod
    def load_checkpoint(cls: type[Model], path: str, map_location: str | torch.device | None = None) -> Model:
        """Rebuild a model from a checkpoint written by ``train.py`` (vocabulary included), read as data
        (``sentence_lab.checkpoints.received``: ``RefusedFile`` for code in the file or a class off the allow-list)."""
        ckpt = read_checkpoint(path)
        vocabs = saved_vocabs(ckpt)
        if not vocabs or not isinstance(ckpt.get("hyper_parameters"), dict):
            raise ValueError(f"{path} is not a checkpoint written by train.py (no vocabulary inside)")
        settings = namespaced_targets(ckpt["hyper_parameters"])
        check_saved_targets(settings, str(path))
        # a pre-trained encoder reads the folder made again from the files the checkpoint carries
        settings = reading_carried_folder(settings, ckpt.get(MODEL_FOLDER_KEY), str(path))
        model = cls(vocabs=vocabs, **settings)
        model.load_state_dict(ckpt["state_dict"])
        device = map_location or ("cuda" if torch.cuda.is_available() else "cpu")
        return model.to(device).eval()

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages the model encodes, ``encode``'s first (its tokenizer's); a second when the objective embeds
        its target side in another language (J_bi: ``EmbedsTargetSide``)."""
        first = self.tokenizer.lang
        target = self.tokenizers.get("target")
        if isinstance(self.objective, EmbedsTargetSide) and target is not None and target.lang != first:
            return first, target.lang
        return (first,)

    def in_language(self, language: str) -> SentenceInference | LanguageSide:
        """The text encoder of ``language``'s side: the model itself for its first language, a ``LanguageSide`` for
        the second; a language the model lacks is refused in one line."""
        if language == self.languages[0]:
            return self
        if language not in self.languages:
            raise ValueError(f"the model encodes {', '.join(self.languages)}, not {language!r}: a second language "
                             "needs a two-language objective (objective=jbi with a target tokenizer of that language)")
        return LanguageSide(self, "target")

    def expand_vocabulary(self) -> dict:
        """Vocabulary expansion (Kiros et al. 2015): every word GloVe knows and the training vocabulary
        lacks gets a vector mapped from GloVe into each embedding table. Affects ``encode`` only.

        Returns the fit (also reported by ``describe``); when no map can be fit (too few words known to
        both), ``{"skipped": reason}`` and ``encode`` keeps ``<unk>`` for such words.
        """
        tables = [m for enc in self._source_encoders for m in enc.modules() if isinstance(m, WordEmbedding)]
        if not tables:  # a pre-trained model: its sub-word vocabulary spells every word
            self.expansion = {"skipped": "the encoders hold no word table (a pre-trained model's tokenizer spells "
                                         "every word in its own sub-words)"}
            return self.expansion
        try:
            self.encode_vocab, fits = expand_embeddings(tables, self.vocab)
        except ValueError as err:
            log.warning("vocabulary expansion skipped: %s", err)
            self.expansion = {"skipped": str(err)}
            return self.expansion
        self.expansion = {"added_words": len(self.encode_vocab) - len(self.vocab),
                          "shared_words": [f.shared_words for f in fits],
                          "relative_residual": [round(f.relative_residual, 4) for f in fits]}
        return self.expansion

    def clear_vocabulary_expansion(self) -> None:
        """Undo ``expand_vocabulary``: ``encode`` maps unknown words to ``<unk>`` again."""
        for module in self.modules():
            if isinstance(module, WordEmbedding):
                module.set_extra_rows(module.weight.new_zeros(0, module.embed_dim))
        self.encode_vocab, self.expansion = self.vocab, None

    def remember_tokens(self, sentences: Iterable[str]) -> None:
        """Tokenise ``sentences`` now and keep their tokens (interned: a table of pointers) until
        ``forget_tokens``: the per-epoch suite encodes the same task sentences every epoch, each epoch through
        that epoch's vocabulary."""
        self._remembered_tokens = {s: tuple(map(sys.intern, self.tokenizer(s))) for s in dict.fromkeys(sentences)}

    def forget_tokens(self) -> None:
        self._remembered_tokens = None

    def token_ids(self, sentence: str) -> list[int]:
        remembered = self._remembered_tokens
        tokens = remembered.get(sentence) if remembered is not None else None
        return self.encode_vocab.encode(tokens if tokens is not None else _cached_tokens(self.tokenizer, sentence))

    def oov_rate(self, sentences: list[str]) -> float:
        """Share of the tokens of ``sentences`` that ``encode`` maps to ``<unk>``."""
        return unknown_share(self.token_ids, sentences)

    @torch.no_grad()
    def embed_ids(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        device = cast(torch.device, self.device)  # where the weights are
        return self.embedder.embed(tokens.to(device), lengths.to(device))

    @torch.no_grad()
    def encode(self, sentences: list[str] | str, batch_size: int = 128) -> np.ndarray:
        """Raw sentences -> float32 ``[n, output_dim]``; batches are length-sorted, order is kept. One string is one
        sentence and gives one ``[output_dim]`` vector (as sentence-transformers' ``encode`` does)."""
        if isinstance(sentences, str):
            return self.encode([sentences], batch_size)[0]
        return self._encode_batches(sentences, batch_size, lambda tokens, lengths: [self.embed_ids(tokens, lengths)])[0]

    # The last layer encode_layers returns is encode's vector (the suite scores it once, as the task's own).
    layers_end_with_output = True

    @torch.no_grad()
    def encode_layers(self, sentences: list[str], batch_size: int = 128) -> list[np.ndarray]:
        """Every layer's vectors, bottom first: float32 ``[n, d_k]`` each (``sentence_lab.encoders.base.ReadsLayers``:
        layer 0 the pooled word vectors, the last ``encode``'s vectors); ``NoLayers`` for an encoder without them."""
        def layers(tokens: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
            device = cast(torch.device, self.device)
            if not isinstance(self.objective, SentenceObjective):
                raise NoLayers(f"objective {type(self.objective).__name__} does not expose its encoder's layers")
            return self.objective.embed_layers(tokens.to(device), lengths.to(device))
        return self._encode_batches(sentences, batch_size, layers)

    def _encode_batches(self, sentences: list[str], batch_size: int,
                        embed: Callable[[torch.Tensor, torch.Tensor], list[torch.Tensor]],
                        token_ids: Callable[[str], list[int]] | None = None) -> list[np.ndarray]:
        """``embed``'s outputs for ``sentences`` (ids from ``token_ids``, the source side's ``token_ids`` by default)
        in length-sorted batches of ``batch_size``, each output a float32 ``[n, d]`` array in the order given (the
        model in eval mode meanwhile)."""
        sentences = list(sentences)
        wrong = next((s for s in sentences if not isinstance(s, str)), None)
        if wrong is not None:
            raise TypeError(f"encode takes sentences as strings; got a {type(wrong).__name__} ({wrong!r:.60}): pass "
                            "a list of str")
        was_training = self.training
        self.eval()
        try:
            ids = [(token_ids or self.token_ids)(s) for s in sentences]
            order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
            out: list[np.ndarray] = []
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                tokens, lengths = pad_batch([ids[i] for i in chunk])
                for k, vectors in enumerate(embed(tokens, lengths)):
                    if k == len(out):
                        out.append(np.zeros((len(ids), vectors.size(1)), dtype=np.float32))
                    out[k][chunk] = vectors.float().cpu().numpy()
            if not out:  # no sentences: one empty array per output (one, for encode)
                out = [np.zeros((0, self.output_dim), dtype=np.float32)]
            return out
        finally:
            self.train(was_training)

    def describe(self) -> dict:
        hp = self.hparams
        languages = self.languages
        return {"encoder": hp["encoder"], "objective": hp["objective"], "tokenizer": self.tokenizer.to_dict(),
                "vocab_size": len(self.vocab), "output_dim": self.output_dim,
                "vocabulary_expansion": self.expansion,
                **({"languages": list(languages)} if len(languages) > 1 else {})}


class TrainedModel(SentenceInference):
    """A model to encode with, not to train: ``SentenceModel``'s parts and weights without Lightning. ``hparams``:
    the settings as a checkpoint keeps them. ``TrainedModel.load_checkpoint(path)`` reads one ``train.py`` wrote."""

    def __init__(self, encoder: Any, objective: Any, vocabs: Mapping[str, Vocab | list[str]] | None = None,
                 tokenizers: Mapping[str, dict] | None = None, vocab: Vocab | list[str] | None = None,
                 tokenizer: dict | None = None, **training: Any) -> None:
        """The arguments of ``SentenceModel``; ``training``: its optimiser and schedule settings, kept in ``hparams``
        (a checkpoint's ``hyper_parameters``), never read here."""
        super().__init__()
        self.hparams: dict[str, Any] = self._build_parts(encoder, objective, vocabs, tokenizers, vocab, tokenizer,
                                                         **training)

    @property
    def device(self) -> torch.device:
        """Where the weights are (the CPU for a model without any)."""
        first = next(self.parameters(), None)
        return first.device if first is not None else torch.device("cpu")


class LanguageSide:
    """A two-language model's second language as a text encoder: that side's tokenizer, vocabulary and encoder
    (``objective.embed_target``: J_bi's ``g``), the model's batching. No vocabulary expansion: it maps GloVe's English
    words, and this side is not English."""

    def __init__(self, model: SentenceInference, side: str = "target") -> None:
        self.model, self.side = model, side
        self.tokenizer, self.vocab = model.tokenizers[side], model.vocabs[side]
        self.language = self.tokenizer.lang

    @property
    def output_dim(self) -> int:
        return self.model.output_dim

    def token_ids(self, sentence: str) -> list[int]:
        return self.vocab.encode(_cached_tokens(self.tokenizer, sentence))

    @torch.no_grad()
    def encode(self, sentences: list[str], batch_size: int = 128) -> np.ndarray:
        """Raw sentences of this side's language -> float32 ``[n, output_dim]``, in the order given."""
        objective = cast(EmbedsTargetSide, self.model.objective)
        device = cast(torch.device, self.model.device)

        def embed(tokens: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
            return [objective.embed_target(tokens.to(device), lengths.to(device))]
        return self.model._encode_batches(sentences, batch_size, embed, self.token_ids)[0]

    def oov_rate(self, sentences: list[str]) -> float:
        """Share of the tokens of ``sentences`` this side maps to ``<unk>``."""
        return unknown_share(self.token_ids, sentences)

    def describe(self) -> dict:
        return {**self.model.describe(), "language": self.language, "side": self.side,
                "tokenizer": self.tokenizer.to_dict(), "vocab_size": len(self.vocab), "vocabulary_expansion": None}
