"""A run and what it leaves on disk: the training run itself (``run``), its directory, its checkpoints (what is
written, atomically, and which one is read), its exits and errors, the settings check on resume, renamed keys and
sweeps. The model and how it learns is ``sentence_lab.training``, one floor below."""
