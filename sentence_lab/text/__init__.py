"""The text layer data, encoders and evaluation share: tokenizers, vocabularies, pre-trained vectors. It imports
no torch (``sentence_lab.text.padding`` does), so corpus-preparation workers start light."""
from sentence_lab.text.tokenizer import Tokenizer
from sentence_lab.text.vocab import BOS_ID, EOS_ID, PAD_ID, SPECIALS, UNK_ID, Vocab

__all__ = ["Tokenizer", "Vocab", "SPECIALS", "PAD_ID", "UNK_ID", "BOS_ID", "EOS_ID"]
