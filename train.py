"""Train a sentence encoder: ``python train.py encoder=bilstm_max objective=qt`` (``sentence_lab/cli/train.py``)."""
from sentence_lab.cli.train import main

if __name__ == "__main__":
    main()
