"""Any encoder the suite evaluates, as an MTEB 2.x model (``mteb.models.models_protocols.EncoderProtocol``).

A trained checkpoint exported to sentence-transformers (``sentence_lab.adapters.export_st``) already runs in MTEB as a
sentence-transformers model. This wrapper serves the encoders that have no such export: ``bow_glove``,
``precomputed``, ``callable``, combine-QT (``ckpt_path=[a,b]``), and checkpoints as they are:

    model = mteb_model("encoder=bow_glove")                 # evaluate.py's overrides
    results = mteb.evaluate(model, mteb.get_tasks(tasks=["STSBenchmark"]), cache=None)

MTEB's tasks are raw text (SentEval's copies are tokenised and lowercased) and its SICK-R has 9,927 test pairs
against SentEval's 4,927: its numbers are MTEB's, not comparable with our STS columns.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from datasets import Dataset, DatasetDict
from hydra import compose, initialize_config_dir
from mteb.abstasks.sts import AbsTaskSTS
from mteb.abstasks.task_metadata import TaskMetadata
from mteb.models.abs_encoder import AbsEncoder
from mteb.models.model_meta import ModelMeta, ScoringFunction

from sentence_lab.adapters.from_config import build_text_encoder
from sentence_lab.home import CONF


class MTEBEncoder(AbsEncoder):
    """``encoder`` (anything with ``encode(list[str]) -> array``) under MTEB's encode protocol; cosine scores."""

    def __init__(self, encoder: Any, name: str, dim: int | None = None) -> None:
        self.model = encoder
        self.mteb_model_meta = ModelMeta(
            loader=None, name=f"sentence-lab/{name}", revision=None, release_date=None, languages=None,
            n_parameters=None, memory_usage_mb=None, max_tokens=None, embed_dim=dim, license=None,
            open_weights=True, public_training_code=None, public_training_data=None, framework=["PyTorch"],
            similarity_fn_name=ScoringFunction.COSINE, use_instructions=False, training_datasets=None)

    def encode(self, inputs, *, task_metadata: TaskMetadata, hf_split: str, hf_subset: str, prompt_type=None,
               **kwargs) -> np.ndarray:
        """Every batch's ``text`` in order, encoded at once (our encoders sort by length themselves)."""
        sentences = [text for batch in inputs for text in batch["text"]]
        return np.asarray(self.model.encode(sentences), dtype=np.float32)


def _untrained_needs_sentences() -> list[str]:
    raise ValueError("an untrained encoder builds its vocabulary from the tasks' sentences, which MTEB does not give "
                     "in advance: evaluate a trained checkpoint (ckpt_path=...) or an evaluation-only encoder")


def mteb_model(*overrides: str) -> MTEBEncoder:
    """The encoder ``python evaluate.py <overrides>`` would score (``encoder=bow_glove``, ``ckpt_path=<run>``,
    ``ckpt_path=[<a>,<b>]``, ``encoder=precomputed encoder.path=...``), wrapped for MTEB."""
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("evaluate", overrides=list(overrides))
    encoder, description = build_text_encoder(cfg, _untrained_needs_sentences)
    name = str(description.get("name", "encoder")).replace("/", "_").replace(":", "_")
    return MTEBEncoder(encoder, name, getattr(encoder, "output_dim", None))


def local_sts_task(name: str, sentence1: Sequence[str], sentence2: Sequence[str], scores: Sequence[float],
                   min_score: float = 0.0, max_score: float = 5.0) -> AbsTaskSTS:
    """An MTEB STS task over pairs held in memory (read from local files), scored like MTEB's own: Spearman of
    the cosine against the gold scores (``cosine_spearman``). For running MTEB offline."""

    class LocalSTS(AbsTaskSTS):
        metadata = TaskMetadata(
            name=name, type="STS", main_score="cosine_spearman", description=f"{name}: local sentence pairs",
            reference=None, dataset={"path": "local", "revision": "local"}, category="t2t", eval_splits=["test"],
            eval_langs=["eng-Latn"], date=None, dialect=[], domains=[], task_subtypes=[], license="not specified",
            annotations_creators="human-annotated", modalities=["text"], sample_creation="found", bibtex_citation="")

        def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
            self.dataset = DatasetDict({"test": Dataset.from_dict(
                {"sentence1": list(sentence1), "sentence2": list(sentence2), "score": [float(s) for s in scores]})})
            self.data_loaded = True

    LocalSTS.min_score, LocalSTS.max_score = min_score, max_score
    return LocalSTS()
