"""sentence-lab: train sentence encoders with the classic objectives and measure them with SentEval's protocol.

The packages, from the bottom floor up: ``text``, ``encoders``, ``objectives``, ``datamodules``, ``training``,
``adapters``, ``tools``, ``cli``; the evaluation engine, ``evaluation``, stands on ``text`` alone
(docs/architecture.md)."""
