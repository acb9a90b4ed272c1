"""Our encoders in MTEB 2.x, offline, on an STS task built from local pairs (issue 32)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from tests.helpers.extras import missing_extra

if reason := missing_extra("mteb"):
    pytest.skip(reason, allow_module_level=True)

import mteb

from sentence_lab.adapters.mteb import MTEBEncoder, local_sts_task, mteb_model

pytestmark = pytest.mark.slow  # end-to-end: outside the fast tier (-m "not slow")

PAIRS = [("A man is playing a guitar.", "A man plays the guitar.", 4.8),
         ("A woman is slicing an onion.", "A man is eating pasta.", 0.5),
         ("The cat sleeps on the sofa.", "A dog barks loudly.", 1.0),
         ("Two dogs run in a field.", "Dogs are running outside.", 4.0),
         ("The children are laughing.", "Kids laugh together.", 4.2),
         ("He bought a new car.", "The weather is cold today.", 0.1),
         ("She reads a book in the garden.", "A woman is reading outdoors.", 3.8),
         ("The stock market fell sharply.", "Shares dropped a lot.", 4.1)]


def task():
    s1, s2, scores = zip(*PAIRS)
    return local_sts_task("LocalPairs", s1, s2, scores)


def cosine_spearman(vectors_a: np.ndarray, vectors_b: np.ndarray) -> float:
    """Spearman of the cosine against the gold scores: what MTEB's STS tasks report, computed here by hand."""
    cos = (vectors_a * vectors_b).sum(1) / (np.linalg.norm(vectors_a, axis=1) * np.linalg.norm(vectors_b, axis=1))
    return float(spearmanr(cos, [p[2] for p in PAIRS])[0])


def mteb_score(model) -> float:
    (result,) = mteb.evaluate(model, task(), cache=None, show_progress_bar=False).task_results
    return float(result.get_score())


def test_an_encoder_without_an_export_runs_in_mteb_with_its_own_vectors():
    model = mteb_model("encoder=bow_glove")
    assert isinstance(model, MTEBEncoder) and model.mteb_model_meta.embed_dim == 50
    ours = cosine_spearman(model.model.encode([p[0] for p in PAIRS]), model.model.encode([p[1] for p in PAIRS]))
    assert mteb_score(model) == pytest.approx(ours, abs=1e-9)
    assert np.isfinite(ours) and ours != 0.0


def test_an_untrained_encoder_is_refused_in_one_line():
    with pytest.raises(ValueError, match="untrained encoder builds its vocabulary"):
        mteb_model("encoder=bilstm_max")


def test_an_exported_model_runs_in_mteb_as_a_sentence_transformers_model(tiny_corpus, tiny_pairs, tmp_path):
    if missing_extra("sentence-transformers-export"):
        pytest.skip(missing_extra("sentence-transformers-export"))
    from sentence_transformers import SentenceTransformer

    from sentence_lab.adapters.export_st import main as export_main
    from sentence_lab.runs.run import fit
    from tests.helpers.train_config import compose_objective_cfg

    cfg = compose_objective_cfg("qt", tiny_corpus, tiny_pairs, tmp_path / "run",
                                ["encoder=bilstm_max", "encoder.hidden_dim=16", "trainer.max_steps=2",
                                 "trainer.max_epochs=1", "++trainer.val_check_interval=1",
                                 "++trainer.limit_val_batches=1", "trainer.num_sanity_val_steps=0", "logger=none",
                                 "test_after_fit=false"])
    fit(cfg)
    export_main([f"ckpt_path={tmp_path / 'run'}", f"out={tmp_path / 'exported'}"])
    exported = SentenceTransformer(str(tmp_path / "exported"), trust_remote_code=True, device="cpu")
    checkpoint = mteb_model(f"ckpt_path={tmp_path / 'run'}")
    ours = cosine_spearman(checkpoint.model.encode([p[0] for p in PAIRS]),
                           checkpoint.model.encode([p[1] for p in PAIRS]))
    assert mteb_score(exported) == pytest.approx(ours, abs=1e-6)
    assert mteb_score(checkpoint) == pytest.approx(ours, abs=1e-9)
