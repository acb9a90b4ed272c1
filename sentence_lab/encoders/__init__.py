"""Sentence encoders: each is built as ``Encoder(vocab=vocab, **config)`` from ``conf/encoder/*.yaml``."""
from sentence_lab.encoders.base import SentenceEncoder
from sentence_lab.encoders.bilstm import BiLSTMLastEncoder, BiLSTMMaxEncoder
from sentence_lab.encoders.bow import BagOfWordsEncoder
from sentence_lab.encoders.gated_conv import GatedConvEncoder
from sentence_lab.encoders.gru import GRUEncoder
from sentence_lab.encoders.transformer import TransformerEncoder

__all__ = [
    "SentenceEncoder",
    "BagOfWordsEncoder",
    "GRUEncoder",
    "BiLSTMMaxEncoder",
    "BiLSTMLastEncoder",
    "GatedConvEncoder",
    "TransformerEncoder",
]
