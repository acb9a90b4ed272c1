"""Tools beside the evaluation engine: the report over runs (``tools.report``), runs side by side
(``tools.compare``), the probing-task generator (``tools.probing_gen``), a checkpoint's weights hash
(``tools.weights_hash``) and what the scripts under ``benchmarks/`` share (``tools.benchmark``). They read what the
engine and training write; models reach them only through ``adapters``."""
