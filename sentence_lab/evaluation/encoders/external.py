"""Evaluation-only encoders of vectors made elsewhere: a file of precomputed vectors, a Python function, a
sentence-transformers model. Each speaks the suite's text-encoder protocol (``encode``/``describe``).
"""
from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pyarrow.parquet as pq
import torch

from sentence_lab.text.model_folders import model_location
from sentence_lab.text.refused_files import check_module_classes


class MissingSentences(ValueError):
    """Sentences a task needs are not in the precomputed file (the task fails, the others go on)."""


def _normalise(sentence: str) -> str:
    return " ".join(str(sentence).split())


def _read_sentences(path: Path) -> list[str]:
    if path.suffix == ".json":
        return [str(s) for s in json.loads(path.read_text(encoding="utf-8"))]
    lines = path.read_text(encoding="utf-8").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def load_embeddings_file(path: str | Path, sentences: str | Path | None = None) -> tuple[list[str], np.ndarray]:
    """(sentences, vectors [n, d]) from ``.npz`` (arrays ``sentences``, ``vectors``), ``.parquet`` (columns
    ``sentence`` and ``vector``) or ``.npy`` with a sentences file (one per line, or a JSON list)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"encoder.path={path}: no such file (a .npz, .parquet or .npy of vectors)")
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as data:
            if "sentences" not in data or "vectors" not in data:
                raise ValueError(f"{path}: a .npz needs arrays 'sentences' and 'vectors', found {list(data.keys())}")
            texts, vectors = [str(s) for s in data["sentences"]], np.asarray(data["vectors"])
    elif path.suffix == ".parquet":
        table = pq.read_table(path)
        if "sentence" not in table.column_names or "vector" not in table.column_names:
            raise ValueError(f"{path}: a .parquet needs columns 'sentence' and 'vector', found {table.column_names}")
        texts = [str(s) for s in table.column("sentence").to_pylist()]
        vectors = np.asarray(table.column("vector").to_pylist())
    elif path.suffix == ".npy":
        if sentences is None:
            raise ValueError(f"{path}: a .npy holds vectors only: give encoder.sentences=<file of the sentences, one "
                             "per line, in the same order>")
        texts, vectors = _read_sentences(Path(sentences).expanduser()), np.load(path, allow_pickle=False)
    else:
        raise ValueError(f"{path}: unknown embeddings format {path.suffix!r}: use .npz, .parquet or .npy (+ sentences)")
    if vectors.ndim != 2 or len(vectors) != len(texts):
        raise ValueError(f"{path}: {len(texts)} sentences but vectors of shape {vectors.shape}: need one row each")
    return texts, vectors


class PrecomputedEncoder:
    """Vectors computed elsewhere, looked up by sentence (whitespace-normalised, as the tasks' text is)."""

    def __init__(self, path: str, sentences: str | None = None) -> None:
        self.path = str(path)
        texts, vectors = load_embeddings_file(path, sentences)
        self.vectors = vectors if np.issubdtype(vectors.dtype, np.floating) else vectors.astype(np.float32)
        self.index = {_normalise(s): i for i, s in enumerate(texts)}
        self.output_dim = int(vectors.shape[1])

    def check_covers(self, sentences: list[str]) -> None:
        """Raise ``MissingSentences`` naming how many of a task's sentences the file lacks, and the first."""
        missing = [s for s in sentences if _normalise(s) not in self.index]
        if missing:
            raise MissingSentences(f"{len(missing)} of {len(sentences)} sentences are not in {self.path} (first: "
                                   f"{missing[0][:60]!r}): encode every sentence of the task's files")

    def encode(self, sentences: list[str], batch_size: int | None = None) -> np.ndarray:
        self.check_covers(sentences)
        return self.vectors[np.asarray([self.index[_normalise(s)] for s in sentences], dtype=np.int64)]

    def describe(self) -> dict:
        return {"name": f"precomputed:{Path(self.path).name}", "source": f"precomputed vectors {self.path}",
                "dim": self.output_dim, "sentences": len(self.index), "dtype": str(self.vectors.dtype)}


def _import_from_cwd(module_name: str) -> ModuleType:
    """``module_name`` imported with the working directory on ``sys.path`` for this one import only, so no later
    import of the process finds a module of the working directory first."""
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)


def resolve_callable(spec: str) -> Callable:
    """``package.module:function`` (or ``path/to/file.py:function``) -> the function."""
    if ":" not in str(spec):
        raise ValueError(f"encoder.function={spec!r}: write it as module:function, e.g. mypkg.embed:encode")
    module_name, _, attr = str(spec).rpartition(":")
    try:
        if module_name.endswith(".py"):
            file = Path(module_name).expanduser().resolve()
            loader = importlib.util.spec_from_file_location(file.stem, file)
            if loader is None or loader.loader is None or not file.is_file():
                raise ImportError(f"no such file {file}")
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
        else:
            module = _import_from_cwd(module_name)
    except ImportError as err:
        raise ValueError(f"encoder.function={spec!r}: cannot import {module_name!r} ({err})") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ValueError(f"encoder.function={spec!r}: {module_name} has no callable {attr!r}")
    return fn


class CallableEncoder:
    """A Python function ``sentences -> array [n, d]`` (numpy or torch) as the encoder."""

    def __init__(self, function: str) -> None:
        self.spec = str(function)
        self.fn = resolve_callable(function)

    def encode(self, sentences: list[str], batch_size: int | None = None) -> np.ndarray:
        out = self.fn(list(sentences))
        if hasattr(out, "detach"):
            out = out.detach().cpu().numpy()
        return np.asarray(out)

    def describe(self) -> dict:
        return {"name": f"callable:{self.spec}", "source": f"Python function {self.spec}"}


class SentenceTransformerEncoder:
    """A sentence-transformers model (a local folder, ``package:<name>``, or a name already in the HF cache),
    loaded offline; on the GPU when there is one. ``trust_remote_code``: let the folder name a module class
    outside sentence-transformers (a model exported by ``sentence_lab.adapters.export_st`` names its own); the folder
    must name no other (``sentence_lab.text.refused_files.check_module_classes``)."""

    def __init__(self, model: str, batch_size: int = 128, normalize: bool = False, device: str = "auto",
                 max_seq_length: int | None = None, trust_remote_code: bool = False) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never download at run time
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise ImportError("encoder=sentence_transformers needs the sentence-transformers package: pip install -r "
                              "requirements-sentence-transformers.txt") from None

        self.model_name = str(model)
        location = str(model_location(model))
        device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        if trust_remote_code:  # the flag admits only this project's export module (docs/trust.md)
            check_module_classes(location)
        try:
            self.model = SentenceTransformer(location, device=device, trust_remote_code=bool(trust_remote_code))
        except OSError as err:
            raise FileNotFoundError(f"encoder.model={model}: not a local sentence-transformers model "
                                    "and nothing may be "
                                    f"downloaded ({str(err).splitlines()[0]})") from None
        if max_seq_length:
            self.model.max_seq_length = int(max_seq_length)
        self.batch_size, self.normalize = int(batch_size), bool(normalize)
        dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.output_dim = int(dim() or 0)

    def encode(self, sentences: list[str], batch_size: int | None = None) -> np.ndarray:
        return self.model.encode(list(sentences), batch_size=batch_size or self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=self.normalize, show_progress_bar=False)

    # Layers are pooled as the model pools its top, before any module after its pooling (Dense, Normalize): the last
    # layer is not the output in general.
    layers_end_with_output = False

    def encode_layers(self, sentences: list[str], batch_size: int | None = None) -> list[np.ndarray]:
        """Each hidden state of the model's transformer (the embeddings' output, then every layer), pooled by the
        model's own pooling module over the real tokens: float32 ``[n, hidden]`` each, bottom first."""
        transformer = next((m for m in self.model if hasattr(m, "auto_model")), None)
        pooling = next((m for m in self.model if type(m).__name__ == "Pooling"), None)
        if transformer is None or pooling is None:
            raise ValueError(f"{self.model_name}: no transformer and pooling module to read layers from (modules: "
                             f"{[type(m).__name__ for m in self.model]})")
        sentences, size = list(sentences), batch_size or self.batch_size
        prepare = getattr(self.model, "preprocess", None) or self.model.tokenize  # tokenize: sentence-transformers < 5
        out: list[list[np.ndarray]] = []
        for start in range(0, len(sentences), size):
            features = prepare(sentences[start:start + size])
            features = {k: v.to(self.model.device) for k, v in features.items() if hasattr(v, "to")}
            inputs = {k: features[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in features}
            with torch.no_grad():
                hidden = transformer.auto_model(**inputs, output_hidden_states=True, return_dict=True).hidden_states
                pooled = [pooling({"token_embeddings": h, "attention_mask": features["attention_mask"]})
                          ["sentence_embedding"].float().cpu().numpy() for h in hidden]
            out = [[p] for p in pooled] if not out else [done + [p] for done, p in zip(out, pooled)]
        return [np.concatenate(parts) for parts in out]

    def describe(self) -> dict:
        import sentence_transformers

        short = (self.model_name.split(":", 1)[1] if self.model_name.startswith("package:")
                 else Path(self.model_name).name)
        return {"name": f"sentence_transformers:{short}", "model": self.model_name,
                "dim": self.output_dim, "max_seq_length": self.model.max_seq_length, "normalize": self.normalize,
                "sentence_transformers": sentence_transformers.__version__, "device": str(self.model.device)}
