"""What the scripts under ``benchmarks/`` share, and the tests and ``scripts/`` with them: not part of the library
(``sentence_lab`` ships none of it). A benchmark run as ``python benchmarks/<name>.py`` imports it as ``lib``
(its folder is first on the path); the tests find it through ``pythonpath`` in ``pytest.ini``.

- :mod:`lib.records`: the ``--smoke`` / ``--output`` options and the JSON record of a run;
- :mod:`lib.smoke_inputs` and :mod:`lib.made_up_tasks`: the tiny inputs of the smoke runs and tests (a corpus, NLI
  pairs, a SentEval data tree), so that no smoke run needs ``SENTENCE_DATA`` or the network;
- :mod:`lib.reference_code`: code outside the project a benchmark runs (SentEval's checkout, InferSent's files);
- :mod:`lib.fresh_environment`: a virtual environment holding a built wheel alone;
- :mod:`lib.engine_timing`, :mod:`lib.timing`, :mod:`lib.flops`, :mod:`lib.dispatch_counts`,
  :mod:`lib.step_dispatch`: what the speed benchmarks time and count;
- :mod:`lib.drills`: the fault drills' table runner;
- :mod:`lib.agreement`, :mod:`lib.calibration`, :mod:`lib.gpu_records`: the agreement, calibration and GPU-check
  figures of the results page.
"""
