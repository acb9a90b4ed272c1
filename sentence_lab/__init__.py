"""sentence-lab: train sentence encoders with the classic objectives and measure them with SentEval's protocol.

The packages, from the bottom floor up: ``text``, ``encoders``, ``objectives``, ``datamodules``, ``training``,
``runs``, ``adapters``, then ``reporting``, ``probing_gen`` and ``benchmarking`` side by side, and ``cli`` on top; the
evaluation engine, ``evaluation``, stands on ``text`` alone (docs/architecture.md)."""
