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

Speed: the Treebank's rules look no further than the whitespace around a word, except at the end of the text (the
final period, which may stand before closing brackets and quotes, and a final ``:`` or ``,``), and the only rule
that reads the start (``^"``) gives the same token as a quote after a space. So ``treebank_tokens`` tokenises each
whitespace-separated piece once, between two words, and remembers it (``_piece``), and the tail (the last piece
that is not only closing brackets and quotes, and those after it) at the end of a text. It gives the tokens of
``reference_tokens`` (the Treebank run over the whole text), about three times faster on books (docs/results.md);
``tests/text/test_treebank_pieces.py`` checks that on the Gutenberg corpus, SentEval's task files and random strings.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from nltk.tokenize import NLTKWordTokenizer

_QUOTE_CHARS = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201b": "'", "\u2032": "'",
     "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"'}
)
_EMPHASIS = re.compile(r"(?<![^\W_])_+|_+(?![^\W_])")
_SPLIT_NEGATION = re.compile(r"(?i)(\w) n ?'t\b")
_SPLIT_CLITIC = re.compile(r"(?i)(\w) ' ?(s|re|ve|ll|d|m|t)\b")
_TREEBANK_QUOTES = {"``": '"', "''": '"'}
_WORDS = NLTKWordTokenizer()
# Tokenising the output again is tried this many times at most before the output is taken as it is (no sentence
# of the task files or the books needs a second round; the loop is a guarantee, not the common path).
_MAX_ROUNDS = 3
# Pieces remembered per process (a piece is a whitespace-separated word with its punctuation; books have a few
# hundred thousand distinct ones, most of them rare): about 40 MB.
_PIECES_REMEMBERED = 200_000
# The only words of letters alone that the Treebank splits (its contractions: can not, gim me, gon na, ...).
_CONTRACTED = frozenset({"cannot", "gimme", "gonna", "gotta", "lemme", "wanna"})
# Between two words, a word of letters and digits followed by one of these gives the word and the mark (the
# Treebank's rules for ``,`` and ``:`` before a non-digit, ``;`` and ``?!`` split it, and nothing else applies).
_SPLIT_MARKS = frozenset(",:;!?")
# A piece made only of these stays in the text's tail: the final-period rule reads across it.
_CLOSING = re.compile(r"[\]\)}>\"'\u00bb\u201d\u2019]+")


def normalise(text: str) -> str:
    """Quotes unified, emphasis underscores dropped, split clitics joined back (``does n't`` -> ``doesn't``)."""
    text = text.translate(_QUOTE_CHARS)
    if "_" in text:
        text = _EMPHASIS.sub(" ", text)
    if "'" in text:
        text = _SPLIT_NEGATION.sub(r"\1n't", text)
        text = _SPLIT_CLITIC.sub(r"\1'\2", text)
    return text


def _until_fixed(one_pass: Callable[[str], list[str]], text: str) -> list[str]:
    tokens = one_pass(text)
    for _ in range(_MAX_ROUNDS):
        again = one_pass(" ".join(tokens))
        if again == tokens:
            break
        tokens = again
    return tokens


def reference_pass(text: str) -> list[str]:
    """One normalisation and Treebank pass over the whole text, quotes mapped: the definition."""
    return [_TREEBANK_QUOTES.get(token, token) for token in _WORDS.tokenize(normalise(text))]


@lru_cache(maxsize=_PIECES_REMEMBERED)
def _piece(piece: str, at_end: bool) -> list[str]:
    """The Treebank's tokens of ``piece`` between two words (``at_end``: after a word, at the end of the text)."""
    tokens = _WORDS.tokenize("a " + piece if at_end else "a " + piece + " a")
    return [_TREEBANK_QUOTES.get(token, token) for token in (tokens[1:] if at_end else tokens[1:-1])]


def forget_pieces() -> None:
    """Empty the remembered pieces (a benchmark's cold start)."""
    _piece.cache_clear()


def single_pass(text: str) -> list[str]:
    """``reference_pass``'s tokens, a remembered piece at a time."""
    text = normalise(text)
    pieces = text.split()
    if not pieces:
        return []
    tail = len(pieces) - 1
    while tail > 0 and _CLOSING.fullmatch(pieces[tail]):
        tail -= 1
    tokens: list[str] = []
    for piece in pieces[:tail]:
        if piece.isalnum() and piece.lower() not in _CONTRACTED:  # no rule splits letters and digits
            tokens.append(piece)
        elif piece[-1] in _SPLIT_MARKS and piece[:-1].isalnum() and piece[:-1].lower() not in _CONTRACTED:
            tokens += (piece[:-1], piece[-1])
        else:
            tokens += _piece(piece, False)
    return tokens + _piece(pieces[-1] if tail == len(pieces) - 1 else _tail_as_written(text, pieces[tail:]), True)


def _tail_as_written(text: str, tail: list[str]) -> str:
    """The last pieces with the whitespace between them as written: the final-period rule reads across spaces but
    not across a tab or a line break."""
    start = len(text.rstrip())
    for piece in reversed(tail):
        start = text.rindex(piece, 0, start)
    return text[start:].rstrip()


def reference_tokens(text: str) -> list[str]:
    """The definition: ``reference_pass`` repeated until the output is a fixed point."""
    return _until_fixed(reference_pass, text)


def treebank_tokens(text: str) -> list[str]:
    """PTB tokens of ``text``: raw, PTB-tokenised and Moses-tokenised forms of a sentence give the same list, and
    ``treebank_tokens(" ".join(treebank_tokens(x))) == treebank_tokens(x)``. The same as ``reference_tokens``."""
    return _until_fixed(single_pass, text)
