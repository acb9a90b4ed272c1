from collections import Counter

import pytest
import torch

from sentence_lab.text import PAD_ID, SPECIALS, UNK_ID, Tokenizer, Vocab
from sentence_lab.text.padding import pad_batch


def test_moses_tokenizer_splits_punctuation_and_lowercases():
    assert Tokenizer("moses", lowercase=True)("Hello, World! It's me.") == [
        "hello", ",", "world", "!", "it", "'s", "me", "."]


def test_whitespace_tokenizer_keeps_case_when_asked():
    assert Tokenizer("whitespace", lowercase=False)("A b,  C") == ["A", "b,", "C"]


def test_unknown_tokenizer_kind_is_a_clear_error():
    with pytest.raises(ValueError, match="moses"):
        Tokenizer("spacy")


def test_vocab_is_frequency_ordered_with_specials_and_limits():
    counts = Counter({"b": 3, "a": 3, "c": 5, "rare": 1})
    vocab = Vocab.build(counts, max_size=len(SPECIALS) + 2, min_count=2)
    assert vocab.itos == list(SPECIALS) + ["c", "a"]
    assert vocab.encode(["c", "b", "zzz"]) == [4, UNK_ID, UNK_ID]


def test_pad_batch_right_pads_and_reports_lengths():
    tokens, lengths = pad_batch([[5, 6, 7], [8], []])
    assert tokens.tolist() == [[5, 6, 7], [8, PAD_ID, PAD_ID], [UNK_ID, PAD_ID, PAD_ID]]
    assert lengths.tolist() == [3, 1, 1]
    assert tokens.dtype == torch.long
