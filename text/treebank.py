"""English text -> Penn-Treebank tokens, whatever form the text arrives in.

SentEval's task files come already tokenised in two conventions (MR, SUBJ, MPQA, SST: PTB, ``does n't``,
``it 's``; CR, MRPC, SICK, STS: Moses, ``doesn 't``), books come raw (``doesn't``), and GloVe 6B was built
from PTB tokens (``n't``, ``'s``, ``ca n't``, ``wo n't``; no ``'t``). NLTK's Treebank tokenizer (the one
InferSent used) does the bulk; on top of it, the smallest normalisation that makes every form give the same
tokens and the output a fixed point (tokenising it again changes nothing):

- curly quotes and primes become ``'`` and ``"``, and the Treebank's opening/closing quotes ``\u0060\u0060``
  and ``''`` become ``"`` (one token for a double quote, whichever side it stands on);
- Project Gutenberg's ``_emphasis_`` underscores that touch no letter on one side are dropped
  (``snake_case`` inside a word stays);
- clitics a tokenizer has already split are joined back before the Treebank splits them its own way:
  ``does n't`` / ``does n 't`` -> ``doesn't``, ``doesn 't`` / ``it ' s`` / ``it 's`` -> ``doesn't`` / ``it's``.
"""
from __future__ import annotations

import re

from nltk.tokenize import NLTKWordTokenizer

_QUOTE_CHARS = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201b": "'", "\u2032": "'", "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"'}
)
_EMPHASIS = re.compile(r"(?<![^\W_])_+|_+(?![^\W_])")
_SPLIT_NEGATION = re.compile(r"(?i)(\w) n ?'t\b")
_SPLIT_CLITIC = re.compile(r"(?i)(\w) ' ?(s|re|ve|ll|d|m|t)\b")
_TREEBANK_QUOTES = {"``": '"', "''": '"'}
_WORDS = NLTKWordTokenizer()
# Tokenising the output again is tried this many times at most before the output is taken as it is (no sentence
# of the task files or the books needs a second round; the loop is a guarantee, not the common path).
_MAX_ROUNDS = 3


def normalise(text: str) -> str:
    """Quotes unified, emphasis underscores dropped, split clitics joined back (``does n't`` -> ``doesn't``)."""
    text = _EMPHASIS.sub(" ", text.translate(_QUOTE_CHARS))
    text = _SPLIT_NEGATION.sub(r"\1n't", text)
    return _SPLIT_CLITIC.sub(r"\1'\2", text)


def single_pass(text: str) -> list[str]:
    """One normalisation and Treebank pass; ``treebank_tokens`` repeats it until the output is a fixed point."""
    return [_TREEBANK_QUOTES.get(token, token) for token in _WORDS.tokenize(normalise(text))]


def treebank_tokens(text: str) -> list[str]:
    """PTB tokens of ``text``: raw, PTB-tokenised and Moses-tokenised forms of a sentence give the same list, and
    ``treebank_tokens(" ".join(treebank_tokens(x))) == treebank_tokens(x)``."""
    tokens = single_pass(text)
    for _ in range(_MAX_ROUNDS):
        again = single_pass(" ".join(tokens))
        if again == tokens:
            break
        tokens = again
    return tokens
