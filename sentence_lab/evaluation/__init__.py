"""SentEval's engine, re-implemented: a suite of tasks (``suite``, its settings read from a config once in
``settings``) run for one encoder (``runner``) under a classifier protocol (``protocol``) into one results schema
(``results``). Its rooms: ``classifier`` (the probe, its fused CPU kernels and CUDA graphs), ``regimes`` (how each
task family is scored, one SentEval regime a module), ``encoders`` (the text-encoder protocol and the
evaluation-only encoders), ``vectors`` (each sentence encoded once; every layer kept on disk), ``probing`` (controls
and MDL beside a probing accuracy) and ``languages`` (a model's second language and translation retrieval). The
tasks it reads are ``sentence_lab.tasks``; it imports no training code."""
