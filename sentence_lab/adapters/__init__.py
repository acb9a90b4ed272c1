"""The one bridge from the evaluation engine to models: a checkpoint, an untrained encoder config or an
evaluation-only encoder config becomes an object that speaks the engine's text-encoder protocol
(``sentence_lab.evaluation.encoders.text_encoders.TextEncoder``). Nothing in ``evaluation/`` imports the training
stack; this package does, for ``evaluate.py``, the report and the benchmarks."""
