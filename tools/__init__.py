"""Tools beside the evaluation engine: the report over runs (``tools.report``), runs side by side
(``tools.compare``) and the probing-task generator (``tools.probing_gen``). They read what the engine and
training write; models reach them only through ``adapters``."""
