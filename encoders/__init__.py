"""Sentence encoders: each is built as ``Encoder(vocab=vocab, **config)`` from ``conf/encoder/*.yaml``."""
from encoders.base import SentenceEncoder
from encoders.bilstm import BiLSTMLastEncoder, BiLSTMMaxEncoder
from encoders.bow import BagOfWordsEncoder
from encoders.gated_conv import GatedConvEncoder
from encoders.gru import GRUEncoder

__all__ = [
    "SentenceEncoder",
    "BagOfWordsEncoder",
    "GRUEncoder",
    "BiLSTMMaxEncoder",
    "BiLSTMLastEncoder",
    "GatedConvEncoder",
]
