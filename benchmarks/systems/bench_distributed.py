"""Two ranks (torchrun, FSDP2, gloo) against one process: same weights, and resuming.

    python -m benchmarks.systems.bench_distributed                 # K=4 RL steps, the demo task
    python -m benchmarks.systems.bench_distributed --steps 6 optim.lr=1e-3

Every run is `rlvr train` as a user runs it (two ranks: `python -m torch.distributed.run
--nproc-per-node 2 -m rlvr train ...`, what `rlvr train --nproc 2` launches):

0. base:      the demo's supervised warm-start once (`steps=0`), one process; every RL
              run below starts from its checkpoint (SFT is single-process).
1. one:       one process, K RL steps, `sampling.generation_shards=2` (the step's prompts
              sampled as two seeded shards, as two ranks sample them).
2. two:       two ranks, K RL steps, the same config.
3. resumed:   two ranks stopped after K/2 steps, then `rlvr train --resume` on two ranks
              to K.
4. onto one:  the two-rank run stopped after K/2 steps, resumed by ONE process to K (the
              optimizer state resharded by torch.distributed.checkpoint).

Compares the final checkpoints' weights (max |dparam|) and the mean seconds per step
(steps 2..K). Last line:

    distributed: 2 ranks vs 1 after K steps, max |dparam| E, s/step A vs B
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import REPO, RESULTS


def rlvr(args: list[str], ranks: int = 1) -> float:
    """Run `rlvr ARGS` (under torchrun for ranks > 1); returns the wall seconds."""
    launcher = ([sys.executable, "-m", "torch.distributed.run", "--standalone",
                 f"--nproc-per-node={ranks}", "-m", "rlvr"] if ranks > 1
                else [sys.executable, "-m", "rlvr"])
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    began = time.perf_counter()
    done = subprocess.run([*launcher, args[0], "--quiet", *args[1:]], env=env,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"rlvr {' '.join(args)} ({ranks} ranks) failed:\n"
                         f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return time.perf_counter() - began


def final_weights(run: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    last = sorted((run / "checkpoints").glob("step-*"))[-1]
    files = sorted(last.glob("*.safetensors"))
    return {k: v for f in files for k, v in load_file(f).items()}


def max_gap(a: dict[str, Any], b: dict[str, Any]) -> float:
    if set(a) != set(b):
        raise SystemExit(f"the checkpoints hold different tensors: {set(a) ^ set(b)}")
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


def metrics(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def seconds_per_step(run: Path) -> float:
    steps = [m["time/step"] for m in metrics(run)][1:]  # step 1 pays one-off allocations
    return sum(steps) / max(len(steps), 1)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--root", default="/tmp/rlvr-bench-distributed")
    parser.add_argument("overrides", nargs="*", help="config overrides for the RL runs")
    args = parser.parse_args(argv)
    k, half = args.steps, args.steps // 2
    root = Path(args.root) / time.strftime("%Y%m%d-%H%M%S")
    base = root / "base"
    walls = {"base": rlvr(["train", "--run-dir", str(base), "steps=0"])}
    start = sorted((base / "checkpoints").glob("step-*"))[-1]
    # A real model's profile would start at lr 1e-5 with warm-up: here the steps must
    # move the weights (else equal weights prove nothing): lr 2e-4 from step 1. The one
    # process runs the ranks' plain update (its fast paths round differently). Adam
    # turns rounding differences in near-zero gradients into weight differences of a
    # few % of lr: 1.3e-5 at lr 5e-4 (RESULTS.md), 5e-6 at 2e-4.
    common = [f"model.path={start}", "sft.steps=0", "sampling.generation_shards=2",
              "checkpoint_every=1", "optim.lr=2e-4", "optim.warmup_steps=0",
              "update.path=plain", *args.overrides]
    runs = {name: root / name for name in ("one", "two", "resumed", "onto_one")}
    walls["one"] = rlvr(["train", "--run-dir", str(runs["one"]), f"steps={k}", *common])
    walls["two"] = rlvr(["train", "--run-dir", str(runs["two"]), f"steps={k}", *common], 2)
    for name, ranks in (("resumed", 2), ("onto_one", 1)):
        rlvr(["train", "--run-dir", str(runs[name]), f"steps={half}", *common], 2)
        rlvr(["train", "--resume", str(runs[name]), f"steps={k}"], ranks)
    weights = {name: final_weights(path) for name, path in runs.items()}
    report = {"steps": k, "root": str(root), "walls_s": walls,
              "E_two_vs_one": max_gap(weights["two"], weights["one"]),
              "E_resumed_vs_two": max_gap(weights["resumed"], weights["two"]),
              "E_onto_one_vs_two": max_gap(weights["onto_one"], weights["two"]),
              "moved": max_gap(weights["one"], final_weights(base)),
              "s_per_step": {n: seconds_per_step(p) for n, p in runs.items()},
              "rewards": {n: [round(m["reward/mean"], 4) for m in metrics(p)]
                          for n, p in runs.items()},
              "overrides": args.overrides}
    for name, rewards in report["rewards"].items():
        print(f"{name:9s} reward/mean by step {rewards}   {report['s_per_step'][name]:.2f} s/step")
    print(f"weights moved by RL (one process): max |dparam| {report['moved']:.2e}")
    print(f"resumed 2-rank run vs uninterrupted: max |dparam| {report['E_resumed_vs_two']:.2e}")
    print(f"2-rank checkpoint resumed by 1 process vs 2 ranks: max |dparam| "
          f"{report['E_onto_one_vs_two']:.2e}")
    out = RESULTS / time.strftime("distributed-%Y%m%d-%H%M.json")
    out.write_text(json.dumps(report, indent=1))
    print(f"results: {out}")
    print(f"distributed: 2 ranks vs 1 after {k} steps, max |dparam| "
          f"{report['E_two_vs_one']:.1e}, s/step {report['s_per_step']['two']:.2f} vs "
          f"{report['s_per_step']['one']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
