"""Every layer's vectors of one task's sentences, from one encoding pass, kept on disk and read a layer at a time.

The per-layer view of the suite (``evaluation.layers=true``) scores each task once per layer of the encoder. The
vectors of all layers come from one pass of ``encode_layers`` over the task's distinct sentences (length-sorted
batches, as the embedding cache encodes), written row by row into one memory-mapped ``.npy`` file per layer in a
temporary folder; a layer is read into memory only while its classifiers train (the rows each split asks for).
So memory holds one layer of the task at a time, whatever the depth, and the disk holds the task's layers
(a 120k-sentence probing task of a 2-layer 4096-d BiLSTM-max: 300 + 2 x 4096 floats a sentence, 4.1 GB). The folder
goes when the task's layers are scored.
"""
from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from sentence_lab.evaluation.encoders.text_encoders import EncodesLayers, check_output

Embed = Callable[[Sequence[str]], np.ndarray]


class LayerStore:
    """The layers of ``sentences``: ``embedder(k)`` looks rows up in layer ``k`` (an ``Embed``, as the regimes take).
    Use as a context manager (the files go at exit), or call :meth:`close`."""

    def __init__(self, sentences: Sequence[str], folder: Path) -> None:
        self.row_of = {s: i for i, s in enumerate(dict.fromkeys(sentences))}
        self.folder = folder
        self.layers: list[np.ndarray] = []  # memory-mapped [n, d_k] per layer
        self.seconds = 0.0

    @classmethod
    def encode(cls, encoder: EncodesLayers, sentences: Sequence[str], batch_size: int = 128,
               directory: str | Path | None = None, name: str = "encoder") -> LayerStore:
        """One pass of ``encoder.encode_layers`` over the distinct ``sentences`` (sorted by tokens, in batches of
        ``batch_size``), each layer written to its file as the batches come; NaN/inf or a layer that changes width
        or count fails here (``text_encoders``' one-line errors)."""
        store = cls(sentences, Path(tempfile.mkdtemp(prefix="layers-", dir=directory)))
        try:
            order = sorted(store.row_of, key=lambda s: len(s.split()))
            for start in range(0, len(order), batch_size):
                batch = order[start:start + batch_size]
                t0 = time.perf_counter()
                layers = encoder.encode_layers(batch)
                store.seconds += time.perf_counter() - t0
                store._write(batch, layers, name)
            return store
        except BaseException:
            store.close()
            raise

    def _write(self, batch: list[str], layers: list[np.ndarray], name: str) -> None:
        if self.layers and len(layers) != len(self.layers):
            raise ValueError(f"{name}.encode_layers returned {len(layers)} layers after {len(self.layers)}: every "
                             "call must return the same layers")
        rows = np.fromiter((self.row_of[s] for s in batch), dtype=np.int64, count=len(batch))
        for k, vectors in enumerate(layers):
            width = self.layers[k].shape[1] if k < len(self.layers) else None
            vectors = check_output(vectors, batch, width, f"{name} layer {k}")
            if k == len(self.layers):
                self.layers.append(np.lib.format.open_memmap(self.folder / f"layer_{k}.npy", mode="w+",
                                                             dtype=vectors.dtype,
                                                             shape=(len(self.row_of), vectors.shape[1])))
            self.layers[k][rows] = vectors

    def __len__(self) -> int:
        return len(self.layers)

    @property
    def widths(self) -> list[int]:
        return [int(layer.shape[1]) for layer in self.layers]

    @property
    def bytes_on_disk(self) -> int:
        return sum(int(layer.nbytes) for layer in self.layers)

    def embedder(self, k: int) -> Embed:
        """Sentences -> their rows of layer ``k``, in memory (a copy read from the file)."""
        layer = self.layers[k]

        def embed(sentences: Sequence[str]) -> np.ndarray:
            rows = np.fromiter((self.row_of[s] for s in sentences), dtype=np.int64, count=len(sentences))
            return np.asarray(layer[rows])
        return embed

    def close(self) -> None:
        """Drop the maps and delete the files."""
        self.layers = []
        for file in self.folder.glob("layer_*.npy"):
            file.unlink(missing_ok=True)
        self.folder.rmdir()

    def __enter__(self) -> LayerStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
