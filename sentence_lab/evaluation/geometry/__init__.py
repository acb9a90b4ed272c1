"""What each layer holds and how it moves: linear CKA between layers' vectors (``cka``), the alignment and uniformity
of the sentence vectors (``alignment``), measured on a fixed sentence sample at every evaluation (``tracking``)."""
