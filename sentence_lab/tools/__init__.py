"""Tools beside the evaluation engine: the report over runs (``sentence_lab.tools.report``), runs side by side
(``sentence_lab.tools.compare``), the probing-task generator (``sentence_lab.tools.probing_gen``), a checkpoint's
weights hash
(``sentence_lab.tools.weights_hash``) and what the scripts under ``benchmarks/`` share
(``sentence_lab.tools.benchmark``). They read what the
engine and training write; models reach them only through ``adapters``."""
