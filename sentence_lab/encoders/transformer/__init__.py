"""Transformer encoders trained from scratch on torch alone (``encoder=transformer``): pre-LayerNorm blocks over
``torch.nn.functional.scaled_dot_product_attention``, positions, and the sentence vector pooled from the top block."""
from sentence_lab.encoders.transformer.encoder import TransformerEncoder

__all__ = ["TransformerEncoder"]
