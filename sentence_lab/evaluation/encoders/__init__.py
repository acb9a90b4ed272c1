"""What the suite encodes with besides a trained model: the text-encoder protocol every encoder speaks
(``text_encoders``), the reference baselines that need no training (``baselines``, ``nb_baselines``), and vectors
made elsewhere (``external``: a file, a Python function, a sentence-transformers model)."""
