"""A training step on two nodes against one node's: the same two ranks (gloo, one process each, the same per-rank
batch) started by Lightning on one node (``trainer=ddp_cpu``: two processes) or by two torchrun launchers, node
ranks 0 and 1, their c10d rendezvous and gloo on 127.0.0.1 (``trainer.num_nodes=2``), as docs/cluster.md gives it.

    python benchmarks/two_nodes.py                  # the default model (BiLSTM-max QT) on the shipped books, 3 rounds
    python benchmarks/two_nodes.py --steps 60 --rounds 3 --overrides encoder=bow
    python benchmarks/two_nodes.py --smoke          # BoW on a tiny generated corpus, one round of a few steps

Each round runs both, one after the other, and times the training loop from inside (``lib.timing.LoopTimer``:
first batch's start to last batch's end, on rank 0); the record gives each round's seconds per step, the medians
and their ratio (two nodes / one node), with the machine and the exact commands.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from lib import records, smoke_inputs
from lib.local_nodes import free_port, torchrun

ROOT = Path(__file__).resolve().parent.parent
TRAIN = ROOT / "train.py"
SMOKE_OVERRIDES = ["encoder=bow", "encoder.embed_dim=16", "encoder.embedding_init=random", "data.batch_size=8"]


def train_overrides(run: Path, steps: int, timer: Path, extra: list[str]) -> list[str]:
    return ["trainer=ddp_cpu", f"trainer.max_steps={steps}", "+trainer.limit_val_batches=0", "logger=none",
            "print_config=false", "~callbacks.eval_suite", f"hydra.run.dir={run}", f"paths.log_dir={run.parent}",
            "+callbacks.loop_timer._target_=lib.timing.LoopTimer", f"+callbacks.loop_timer.output={timer}", *extra]


def environment() -> dict[str, str]:
    """One thread a rank, the benchmarks' folder importable (the timer), gloo on the loopback interface."""
    path = os.pathsep.join([str(ROOT / "benchmarks"), str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path, "GLOO_SOCKET_IFNAME": "lo"}


def one_node(run: Path, steps: int, extra: list[str]) -> tuple[dict, list[list[str]]]:
    timer = run.parent / f"{run.name}.timer.json"
    command = [sys.executable, str(TRAIN), *train_overrides(run, steps, timer, extra)]
    done = subprocess.run(command, cwd=ROOT, env=environment(), capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"one node: train.py failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return json.loads(timer.read_text()), [command]


def two_nodes(run: Path, steps: int, extra: list[str]) -> tuple[dict, list[list[str]]]:
    timer = run.parent / f"{run.name}.timer.json"
    port = free_port()
    commands = [[*torchrun(node, port), str(TRAIN),
                 *train_overrides(run, steps, timer, ["trainer.devices=1", "trainer.num_nodes=2", *extra])]
                for node in (0, 1)]
    launchers = [subprocess.Popen(c, cwd=ROOT, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True) for c in commands]
    outputs = [launcher.communicate()[0] for launcher in launchers]
    if any(launcher.returncode for launcher in launchers):
        raise SystemExit(f"two nodes: a launcher failed: {outputs[0][-1500:]}\n{outputs[1][-1500:]}")
    return json.loads(timer.read_text()), commands


def per_step(timed: dict) -> float:
    return float(timed["seconds"]) / max(int(timed["batches"]) - 1, 1)  # the first batch starts the clock


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=60, help="training steps a run (the loop is timed from inside)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both runs, one after the other")
    parser.add_argument("--overrides", nargs="*", default=[], help="more train.py overrides for both (the model)")
    records.add_options(parser, "BoW on a tiny generated corpus, one round of a few steps")
    args = parser.parse_args(argv)
    record = records.start("two_nodes", args, ROOT)
    steps, rounds, extra = (6, 1, SMOKE_OVERRIDES) if args.smoke else (args.steps, args.rounds, list(args.overrides))
    with tempfile.TemporaryDirectory(prefix="two_nodes_") as tmp:
        work = Path(tmp)
        if args.smoke:
            corpus = work / "corpus"
            smoke_inputs.write_corpus(corpus / "train", 4, 40, seed=0)
            smoke_inputs.write_corpus(corpus / "valid", 1, 24, seed=1)
            extra = [*extra, f"data.train_dir={corpus / 'train'}", f"data.valid_dir={corpus / 'valid'}"]
        extra = [*extra, f"paths.cache_dir={work / 'cache'}"]
        seconds: dict[str, list[float]] = {"one_node": [], "two_nodes": []}
        commands: dict[str, list[str]] = {}
        for k in range(rounds):
            for name, launch in (("one_node", one_node), ("two_nodes", two_nodes)):
                timed, ran = launch(work / f"{name}_{k}", steps, extra)
                seconds[name].append(round(per_step(timed), 4))
                commands[name] = [shlex.join(c) for c in ran]
                print(f"round {k}: {name}: {seconds[name][-1]:.3f} s a step ({timed['batches']} steps)", flush=True)
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    ratio = round(medians["two_nodes"] / medians["one_node"], 3)
    print(f"median s/step: one node (2 processes) {medians['one_node']:.3f}, two nodes (1 process each) "
          f"{medians['two_nodes']:.3f}; ratio {ratio}")
    record.write({"model": extra, "steps": steps,
                  "one_node": {"seconds_per_step": seconds["one_node"], "median": medians["one_node"],
                               "command": commands["one_node"]},
                  "two_nodes": {"seconds_per_step": seconds["two_nodes"], "median": medians["two_nodes"],
                                "commands": commands["two_nodes"]},
                  "ratio": ratio})
    return 0


if __name__ == "__main__":
    sys.exit(main())
