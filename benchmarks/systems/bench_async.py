"""Steps per second: synchronous rollouts (rollout.max_staleness=0) against a producer
process sampling one version ahead (K=1), on the demo task.

    python -m benchmarks.systems.bench_async                  # 12 RL steps each
    python -m benchmarks.systems.bench_async --steps 20 sampling.prompts_per_step=16

Every run is `rlvr train` as a user runs it, from one warm-started checkpoint (the
demo's SFT, once, `steps=0`), with the same config but `rollout.max_staleness`. Steps
per second are over steps 2..N (step 1 of K=1 includes the producer's start-up). With
K=1 the producer decodes step s+1 while the trainer grades and updates step s, so the
step time falls towards max(generate, verify + update) from their sum, when the
machine has cores for both (the producer's `rollout.producer_threads`, the trainer's
`model.threads`): on the 2-core development machine the two processes share them.
Also reported: mean staleness, the trainer's and producer's idle seconds, the final
reward. Last line:

    async: K=1 vs sync, S1 vs S0 steps/s (xR), trainer idle I s/step, staleness M
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import REPO, RESULTS


def rlvr(args: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([sys.executable, "-m", "rlvr", args[0], "--quiet", *args[1:]],
                          env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"rlvr {' '.join(args)} failed:\n{done.stderr[-3000:]}")


def metrics(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def summary(run: Path) -> dict:
    rows = metrics(run)[1:]  # step 1: start-up
    seconds = sum(m["time/step"] for m in rows)
    mean = lambda key: sum(m.get(key, 0.0) for m in rows) / max(1, len(rows))  # noqa: E731
    return {"steps_per_s": len(rows) / seconds if seconds else 0.0,
            "s_per_step": seconds / max(1, len(rows)),
            "generate_s": mean("time/generate"), "update_s": mean("time/update"),
            "trainer_idle_s": mean("time/trainer_idle"),
            "producer_idle_s": mean("time/producer_idle"),
            "staleness_mean": mean("staleness/mean"),
            "final_reward": metrics(run)[-1]["reward/mean"]}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--root", default="/tmp/rlvr-bench-async")
    parser.add_argument("overrides", nargs="*", help="config overrides for both RL runs")
    args = parser.parse_args(argv)
    root = Path(args.root) / time.strftime("%Y%m%d-%H%M%S")
    base = root / "base"
    rlvr(["train", "--run-dir", str(base), "steps=0"])
    start = sorted((base / "checkpoints").glob("step-*"))[-1]
    common = [f"model.path={start}", "profile=demo", "sft.steps=0", f"steps={args.steps}",
              "checkpoint_every=0", "data.eval_size=20", *args.overrides]
    report = {"steps": args.steps, "root": str(root), "overrides": args.overrides}
    for name, k in (("sync", 0), ("k1", 1)):
        run = root / name
        rlvr(["train", "--run-dir", str(run), *common, f"rollout.max_staleness={k}"])
        report[name] = summary(run)
        print(f"{name:5s} {json.dumps({k: round(v, 4) for k, v in report[name].items()})}")
    out = RESULTS / time.strftime("async-%Y%m%d-%H%M.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(f"results: {out}")
    sync, k1 = report["sync"], report["k1"]
    print(f"async: K=1 vs sync, {k1['steps_per_s']:.2f} vs {sync['steps_per_s']:.2f} steps/s "
          f"(x{k1['steps_per_s'] / max(sync['steps_per_s'], 1e-9):.2f}), trainer idle "
          f"{k1['trainer_idle_s']:.2f} s/step, staleness {k1['staleness_mean']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
