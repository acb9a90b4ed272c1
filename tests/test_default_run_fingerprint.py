"""The default run's promise (README's first paragraph, docs/results.md "The default run against its epoch 0") holds
only while the default run trains as it did when it was measured. This test trains its first steps (the default
recipe's model, the shipped books, seed 1234) and compares them with the fingerprint recorded in
``default_run_fingerprint.json``: the settings that decide training, the vocabulary and the batches' token ids exactly,
the losses and the weights' norms within a tolerance that no change of the data, the model or a setting stays under,
so that it holds on any machine and in any run directory. On a machine like the one that recorded it (the same torch
build, CPU capability and thread count, as CI's and the developers' machines are), the weights must also be the same to
the bit: a change of the arithmetic alone (another batching of the same sums) moves the weights of 494 steps as another
seed would, and the default run's figures with them. Within one capability (AVX-512), oneDNN's recurrent kernels take
other paths on other processor models, so the record lists the bits of each model the project's machines have been
(``weights_sha256`` and ``weights_sha256_on_other_cpus``); a change of the arithmetic gives bits none of them has.

A change that moves it fails here. If the change is meant, record the new fingerprint and re-measure the default run
in the same commit:

    SENTENCE_LAB_UPDATE_FINGERPRINT=1 python -m pytest tests/test_default_run_fingerprint.py
    SENTENCE_DATA=../shared/data python benchmarks/training_pays_off.py --seeds 1234,1,2
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from sentence_lab.runs.run import fit
from sentence_lab.training.trainer_state import callbacks_of
from tests.helpers.fingerprint import FirstSteps
from tests.helpers.train_config import compose_default_cfg

pytestmark = pytest.mark.slow

RECORD = Path(__file__).with_name("default_run_fingerprint.json")
STEPS = 10
RTOL = 1e-4
# The settings that decide what the default run trains (resolved); paths and the run directory are left out.
DECIDING = ["seed", "monitor", "monitor_mode", "encoder", "objective", "model", "data.batch_size", "data.tokenizer",
            "data.lowercase", "data.min_tokens", "data.max_tokens", "data.vocab_size", "data.min_count",
            "data.vocab_source", "data.run_length", "data.max_train_sentences", "trainer.max_epochs",
            "trainer.max_steps", "trainer.max_time", "trainer.val_check_interval", "trainer.gradient_clip_val",
            "trainer.precision", "trainer.deterministic", "trainer.accumulate_grad_batches",
            "callbacks.model_checkpoint.monitor", "callbacks.model_checkpoint.mode",
            "callbacks.last_checkpoint.every_n_train_steps", "callbacks.non_finite_steps.max_in_a_row"]
UPDATE = ("the default run's training changed ({what}). If the change is meant, record it and re-measure the default "
          "run in the same commit: SENTENCE_LAB_UPDATE_FINGERPRINT=1 python -m pytest "
          "tests/test_default_run_fingerprint.py, then SENTENCE_DATA=../shared/data python "
          "benchmarks/training_pays_off.py --seeds 1234,1,2 and update the "
          "README's first paragraph, docs/results.md's default-run table and the changelog")


def _deciding_settings(cfg) -> dict:
    return {key: OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
            for key in DECIDING for value in [OmegaConf.select(cfg, key, default=None)]}


def _recorded_threads() -> int:
    """The thread count the fingerprint was recorded with (this machine's default when recording anew)."""
    if os.environ.get("SENTENCE_LAB_UPDATE_FINGERPRINT") or not RECORD.is_file():
        return torch.get_num_threads()
    return int(json.loads(RECORD.read_text(encoding="utf-8"))["environment"]["threads"])


def _fingerprint(tmp_path: Path) -> dict:
    settings = _deciding_settings(compose_default_cfg(tmp_path / "default", []))
    cfg = compose_default_cfg(tmp_path / "run", [f"paths.cache_dir={tmp_path / 'cache'}", f"trainer.max_steps={STEPS}",
                                                 "logger=none", "~callbacks.rich_progress_bar",
                                                 "~callbacks.model_summary",
                                                 "+callbacks.first_steps._target_=tests.helpers.fingerprint.FirstSteps"])
    threads = torch.get_num_threads()
    torch.set_num_threads(_recorded_threads())  # the recorded arithmetic, whatever share of the cores xdist gave
    try:
        trainer, model = fit(cfg)
    finally:
        torch.set_num_threads(threads)
    steps = next(c for c in callbacks_of(trainer) if isinstance(c, FirstSteps))
    words = "\n".join(model.vocab.itos).encode()
    state = model.state_dict()
    digest = hashlib.sha256()
    for name in sorted(state):
        digest.update(name.encode())
        digest.update(state[name].detach().cpu().contiguous().numpy().tobytes())
    return {"environment": {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                            "threads": _recorded_threads()},
            "weights_sha256": digest.hexdigest()[:16], "settings": settings,
            "vocabulary": {"size": len(model.vocab.itos), "sha256": hashlib.sha256(words).hexdigest()[:16]},
            "batches": steps.batches, "losses": steps.losses,
            "weight_norms": {name: float(p.detach().norm()) for name, p in model.state_dict().items()
                             if p.is_floating_point()}}


def test_the_default_runs_first_steps_are_the_recorded_ones(tmp_path):
    seen = _fingerprint(tmp_path)
    if os.environ.get("SENTENCE_LAB_UPDATE_FINGERPRINT"):
        RECORD.write_text(json.dumps(seen, indent=1) + "\n", encoding="utf-8")
    recorded = json.loads(RECORD.read_text(encoding="utf-8"))
    assert seen["settings"] == recorded["settings"], UPDATE.format(what="its settings: " + ", ".join(
        f"{k}: {recorded['settings'].get(k)!r} -> {v!r}" for k, v in seen["settings"].items()
        if recorded["settings"].get(k) != v))
    assert seen["vocabulary"] == recorded["vocabulary"], UPDATE.format(what="its vocabulary")
    assert seen["batches"] == recorded["batches"], UPDATE.format(what="the sentences of its first batches")
    assert seen["losses"] == pytest.approx(recorded["losses"], rel=RTOL), UPDATE.format(
        what=f"its first losses: {recorded['losses']} -> {seen['losses']}")
    assert seen["weight_norms"].keys() == recorded["weight_norms"].keys(), UPDATE.format(what="its parameters")
    moved = [k for k, v in seen["weight_norms"].items() if v != pytest.approx(recorded["weight_norms"][k], rel=RTOL)]
    assert not moved, UPDATE.format(what=f"its weights after {STEPS} steps: {', '.join(moved[:5])}")
    if seen["environment"] == recorded["environment"]:  # the same arithmetic: the same bits as on one recorded CPU
        known = {recorded["weights_sha256"], *recorded.get("weights_sha256_on_other_cpus", {})}
        assert seen["weights_sha256"] in known, UPDATE.format(
            what=f"its weights after {STEPS} steps, to the bit (the losses and norms agree to {RTOL:g}: the arithmetic "
                 "changed, which moves the 494 steps of the default run as another seed would; or this processor model "
                 "is not recorded yet: if the commit before gives these bits too, add them to "
                 "weights_sha256_on_other_cpus with the model from /proc/cpuinfo)")
