"""A run and what it leaves on disk: the training run itself (``run``), its directory, its exits and errors, the
settings check on resume, renamed keys, the cluster's environment and sweeps. Its checkpoints are
``sentence_lab.checkpoints``; the model and how it learns is ``sentence_lab.training``, below both."""
