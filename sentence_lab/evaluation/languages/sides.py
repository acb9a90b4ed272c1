"""A model's further languages (``text_encoders.HasLanguages``, e.g. J_bi's French encoder): each scored on its
language's probing tasks and on translation retrieval against the first language, into the results' ``sides[LANG]``
(``results.SideResults``), the first language's scores staying ``results[TASK]``.

Retrieval (``.retrieval``): the held-out Tatoeba pairs (``tasks.tatoeba``), each English
sentence encoded by the first side and its translation by the other, error rates in both directions by cosine and by
margin, beside two baselines that read the sentences alone (random vectors; character n-gram TF-IDF). Its main score,
``margin_error``, is the mean of the margin's two error rates: lower is better.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable

import numpy as np

from sentence_lab.evaluation.encoders.text_encoders import HasLanguages, TextEncoder
from sentence_lab.evaluation.languages.retrieval import char_ngram_cosines, error_rates, error_rates_of, random_vectors
from sentence_lab.evaluation.runner import LoadedTask, run_tasks
from sentence_lab.evaluation.vectors.embedding_cache import EmbeddingCache
from sentence_lab.tasks.base import MissingTaskData, TaskDataError
from sentence_lab.tasks.tatoeba import RETRIEVAL_TASK, RetrievalPairs, load_retrieval_pairs

RETRIEVAL_FAMILY = "retrieval"
MAIN_METRIC = "margin_error"
BASELINE_SEED = 1111


class NoSuchSide(ValueError):
    """A language asked of an encoder that does not have it (one line, naming the encoder's languages)."""


def languages_of(encoder) -> tuple[str, ...]:
    """The encoder's languages, its first ``encode``'s; () when it does not say (one language, unnamed)."""
    return tuple(encoder.languages) if isinstance(encoder, HasLanguages) else ()


def side_languages(encoder, wanted: str | Iterable[str] = "auto") -> list[str]:
    """The languages beyond the first to score: ``auto`` every one the encoder has, ``none`` none, or a list of codes,
    each refused (``NoSuchSide``, one line) when the encoder lacks it."""
    languages = languages_of(encoder)
    if isinstance(wanted, str) and wanted.lower() in ("auto", "none"):
        return list(languages[1:]) if wanted.lower() == "auto" else []
    asked = [wanted] if isinstance(wanted, str) else [str(code) for code in wanted]
    missing = [code for code in asked if code not in languages[1:]]
    if missing:
        has = (f"encodes {languages[0]} alone" if len(languages) == 1 else
               f"encodes {', '.join(languages)}" if languages else "has one language")
        raise NoSuchSide(f"sides={','.join(missing)}: the encoder {has}; a second language and translation retrieval "
                         "need a two-language model (e.g. objective=jbi data=tatoeba_en_fr): use sides=auto or none")
    return asked


def rates_by_direction(rates: dict[str, float], first: str, other: str) -> dict[str, dict[str, float]]:
    """``error_rates``' ``{"cosine x->y": ...}`` as ``{"cosine": {"en->fr": ..., "fr->en": ...}, "margin": ...}``."""
    out: dict[str, dict[str, float]] = {}
    for key, value in rates.items():
        score, direction = key.split(" ")
        named = f"{first}->{other}" if direction == "x->y" else f"{other}->{first}"
        out.setdefault(score, {})[named] = round(float(value), 2)
    return out


def retrieval_baselines(pairs: RetrievalPairs, first: str, dim: int) -> dict[str, dict]:
    """What the sentences alone find: random ``dim``-wide vectors, and character n-gram TF-IDF cosines."""
    x, y = random_vectors(len(pairs.first), dim, BASELINE_SEED)
    return {"random": rates_by_direction(error_rates(x, y), first, pairs.language),
            "char_ngram": rates_by_direction(error_rates_of(char_ngram_cosines(pairs.first, pairs.other)), first,
                                             pairs.language)}


def score_retrieval(encoder, side: TextEncoder, pairs: RetrievalPairs, first: str, batch_size: int = 128,
                    baselines: dict[int, dict] | None = None) -> dict:
    """The retrieval result of one pair of sides: error rates (``error``), ``margin_error`` (the main score), the
    baselines, the pairs' provenance and timings. ``baselines``: the baselines already computed for these pairs, by
    vector width (they read the sentences alone: the per-epoch suite computes them once a fit)."""
    t0 = time.perf_counter()
    first_cache = EmbeddingCache(encoder, batch_size, name=f"{first} side")
    other_cache = EmbeddingCache(side, batch_size, name=f"{pairs.language} side")
    x, y = first_cache.embed(pairs.first), other_cache.embed(pairs.other)
    encode_seconds = first_cache.seconds + other_cache.seconds
    error = rates_by_direction(error_rates(x, y), first, pairs.language)
    main = float(np.mean(list(error["margin"].values())))
    baselines = {} if baselines is None else baselines
    if x.shape[1] not in baselines:
        baselines[x.shape[1]] = retrieval_baselines(pairs, first, x.shape[1])
    seconds = time.perf_counter() - t0
    return {"error": error, MAIN_METRIC: round(main, 2), "main_score": round(main, 2), "main_metric": MAIN_METRIC,
            "lower_is_better": True, "baselines": baselines[x.shape[1]],
            "n": len(pairs.first), "seconds": round(seconds, 3), "encode_seconds": round(encode_seconds, 3),
            "classifier_seconds": round(seconds - encode_seconds, 3), "regime": RETRIEVAL_FAMILY, **pairs.info}


@dataclasses.dataclass
class SideTasks:
    """What a side is scored on: its language's probing tasks (loaded) and the retrieval pairs (or why not)."""

    probing: list[LoadedTask]
    pairs: RetrievalPairs | None
    retrieval_error: str | None = None
    retrieval_missing: bool = False
    baselines: dict[int, dict] = dataclasses.field(default_factory=dict)  # by vector width, computed once


def load_retrieval(data_dir, language: str, size: int, path=None) -> tuple[RetrievalPairs | None, str | None, bool]:
    """(pairs, None, False), or (None, the one-line reason, whether the data is missing)."""
    try:
        return load_retrieval_pairs(data_dir, language, size, path), None, False
    except MissingTaskData as err:
        return None, str(err), True
    except TaskDataError as err:
        return None, str(err), False


def run_side(encoder, language: str, tasks: SideTasks, params, writer, *, console=None,
             encode_batch_size: int = 128) -> None:
    """Score ``encoder``'s ``language`` side into ``writer`` (a ``results.SideWriter``): its probing tasks, then
    retrieval against the first language. One task's failure is recorded and the others run."""
    first = languages_of(encoder)[0]
    side = encoder.in_language(language)
    run_tasks([dataclasses.replace(task) for task in tasks.probing], side, params, writer, console=console,
              encode_batch_size=encode_batch_size)
    if tasks.pairs is None:
        (writer.add_skipped if tasks.retrieval_missing else writer.add_error)(RETRIEVAL_TASK, tasks.retrieval_error)
        return
    try:
        result = score_retrieval(encoder, side, tasks.pairs, first, encode_batch_size, tasks.baselines)
    except Exception as err:  # noqa: BLE001 - the side's other scores stay
        writer.add_error(RETRIEVAL_TASK, f"{RETRIEVAL_TASK} failed: {type(err).__name__}: {err}".replace("\n", " "))
        return
    writer.add_result(RETRIEVAL_TASK, result)
    if console is not None:
        error = result["error"]
        console.print(f"{language}: {RETRIEVAL_TASK:<15} margin error {result['main_score']:.2f} "
                      f"({' / '.join(f'{d} {v:.1f}' for d, v in error['margin'].items())}; cosine "
                      f"{' / '.join(f'{v:.1f}' for v in error['cosine'].values())}; char n-grams "
                      f"{' / '.join(f'{v:.1f}' for v in result['baselines']['char_ngram']['margin'].values())})",
                      highlight=False, soft_wrap=True)
