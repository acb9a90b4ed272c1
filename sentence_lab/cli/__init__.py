"""The command-line entry points: ``train``, ``evaluate`` and ``report`` (the repository's ``train.py``,
``evaluate.py`` and ``report.py`` and the ``sentence-lab-*`` console scripts run these)."""
