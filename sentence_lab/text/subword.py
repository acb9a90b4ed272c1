"""A pre-trained model's own fast tokenizer (``tokenizers``, from the folder's ``tokenizer.json``) as the text layer
sees it: sub-word tokens as strings, the model's vocabulary as a ``Vocab`` (this project's four specials first, then
the model's tokens in its id order) and the special tokens the model wraps every sentence in. Needs the
``sentence-transformers`` extra (``tokenizers`` comes with it)."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from sentence_lab.text.vocab import SPECIALS, Vocab

MISSING: str | None = None  # why the optional extra does not import, if it does not
try:
    from tokenizers import Tokenizer as FastTokenizer
except ImportError as missing:  # the optional extra
    MISSING = f"{missing}: pip install -r requirements-sentence-transformers.txt (tokenizers, transformers)"

TOKENIZER_FILE = "tokenizer.json"


def tokenizer_file(folder: str | Path) -> Path:
    """The folder's ``tokenizer.json``; one line when it has none (a model without a fast tokenizer)."""
    path = Path(folder) / TOKENIZER_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no {TOKENIZER_FILE}: encoder=pretrained reads a model's fast tokenizer "
                                "(save it with tokenizer.save_pretrained, which writes tokenizer.json)")
    return path


@cache
def fingerprint(folder: str) -> str:
    """The tokenizer's identity: the first 16 hex digits of ``tokenizer.json``'s SHA-256 (what caches are keyed by)."""
    return hashlib.sha256(tokenizer_file(folder).read_bytes()).hexdigest()[:16]


@cache
def fast_tokenizer(folder: str) -> FastTokenizer:
    """The folder's tokenizer, padding and truncation off (a sentence's tokens are all its tokens; the encoder cuts
    and counts)."""
    if MISSING is not None:
        raise ImportError(f"a pre-trained model's tokenizer needs the tokenizers package ({MISSING})")
    tokenizer = FastTokenizer.from_file(str(tokenizer_file(folder)))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def subword_tokens(folder: str, text: str) -> list[str]:
    """``text`` as the model's tokens, without the special tokens it adds around a sentence."""
    return fast_tokenizer(folder).encode(text, add_special_tokens=False).tokens


@dataclass(frozen=True)
class SpecialTokens:
    """The ids the model wraps a sentence in (``prefix`` before it, ``suffix`` after: BERT's [CLS] and [SEP]), and
    its padding and unknown-token ids."""

    prefix: tuple[int, ...]
    suffix: tuple[int, ...]
    pad: int
    unk: int


@cache
def special_tokens(folder: str) -> SpecialTokens:
    """Read off the tokenizer's own post-processing of a one-word sentence (the special tokens before and after the
    word's), its padding token and its model's unknown token."""
    tokenizer = fast_tokenizer(folder)
    encoding = tokenizer.encode("a", add_special_tokens=True)
    words = [k for k, special in enumerate(encoding.special_tokens_mask) if not special]
    first, last = (words[0], words[-1]) if words else (len(encoding.ids), len(encoding.ids) - 1)
    model = json.loads(tokenizer.to_str()).get("model", {})
    pads = [tokenizer.token_to_id(t) for t in ("[PAD]", "<pad>")]
    pad = next((found for found in pads if found is not None), 0)
    unk = tokenizer.token_to_id(str(model.get("unk_token") or "[UNK]"))
    return SpecialTokens(tuple(encoding.ids[:first]), tuple(encoding.ids[last + 1:]), pad,
                         unk if unk is not None else pad)


@cache
def tokenizer_vocab(folder: str) -> Vocab:
    """The model's vocabulary as a ``Vocab``: ``<pad> <unk> <s> </s>``, then every token of the model in its id
    order (a token spelled as one of those four is left out: the encoder maps the four onto the model's own)."""
    tokenizer = fast_tokenizer(folder)
    by_id = sorted(tokenizer.get_vocab(with_added_tokens=True).items(), key=lambda item: item[1])
    return Vocab(list(SPECIALS) + [token for token, _ in by_id if token not in SPECIALS])


def model_ids(folder: str, vocab: Vocab) -> list[int]:
    """For each id of ``vocab``, the model's id of that token (``<pad>`` the model's padding, ``<unk>`` its
    unknown token, ``<s>``/``</s>`` the first prefix and last suffix token). One line when ``vocab`` holds a token
    the model's tokenizer does not know (a vocabulary not drawn from this model)."""
    tokenizer, specials = fast_tokenizer(folder), special_tokens(folder)
    first, last = (specials.prefix or (specials.unk,))[0], (specials.suffix or (specials.unk,))[-1]
    ids = [specials.pad, specials.unk, first, last]
    unknown = []
    for token in vocab.itos[len(SPECIALS):]:
        found = tokenizer.token_to_id(token)
        if found is None:
            unknown.append(token)
            found = specials.unk
        ids.append(int(found))
    if unknown:
        raise ValueError(f"{len(unknown)} tokens of the vocabulary are not the model's (first: {unknown[0]!r}): a "
                         "pre-trained encoder reads its own tokenizer's vocabulary only")
    return ids
