"""The text layer data, encoders and evaluation share: tokenizers, vocabularies, pre-trained vectors."""
from sentence_lab.text.tokenizer import Tokenizer
from sentence_lab.text.vocab import BOS_ID, EOS_ID, PAD_ID, SPECIALS, UNK_ID, Vocab, pad_batch

__all__ = ["Tokenizer", "Vocab", "pad_batch", "SPECIALS", "PAD_ID", "UNK_ID", "BOS_ID", "EOS_ID"]
