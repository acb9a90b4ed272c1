"""Evaluate a sentence encoder on SentEval's tasks: ``python evaluate.py ckpt_path=<run> tasks=all``
(``sentence_lab/cli/evaluate.py``)."""
from sentence_lab.cli.evaluate import main

if __name__ == "__main__":
    main()
