"""Train a sentence encoder: ``python train.py encoder=bilstm_max objective=qt`` (``sentence_lab/cli/train.py``).

The import sits under the ``__main__`` guard: corpus-preparation workers are spawned processes, which re-run this
file's top level, and must not import torch and Lightning for nothing."""

if __name__ == "__main__":
    from sentence_lab.cli.train import main

    main()
