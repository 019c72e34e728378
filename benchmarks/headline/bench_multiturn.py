"""The embedded multi-turn demo, end to end: `rlvr train --config configs/demo_multiturn.yaml`.

SmolLM2-135M-Instruct looks for a hidden integer from 1 to 8 in the `guess_number`
environment (4 guesses, a "higher" / "lower" reply after each wrong one). The benchmark
runs the recipe in a subprocess as a user would, in a fresh run directory, reads the
run's summary.json (its held-out evaluations before and after RL) and prints, last:

    multiturn: TASK final-turn success A -> B in S s (N steps), solved after feedback F0 -> F1

A, B: held-out final-turn success before and after RL: the share of held-out episodes
     (one greedy episode per record, in the run's environment: rlvr.training.episode_eval)
     that end solved. Greedy, as the one-turn headline is: every held-out prompt is the
     same, so A and B measure the policy's one deterministic search, over the hidden
     numbers the held-out set draws.
S:   the run's training clock (held-out evaluations paused out; max_seconds caps it).
N:   RL steps run.
F0, F1: the share of those episodes solved at turn 2 or later, after the environment's
     first reply (greedy/solved_after_feedback), before and after.

    PYTHONPATH=src python -m benchmarks.headline.bench_multiturn [--seed 0] [key=value ...]

Each run's numbers also go to benchmarks/results/multiturn-<time>-seed<S>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import REPO, RESULTS

CONFIG = REPO / "configs" / "demo_multiturn.yaml"


def run_demo(run_dir: Path, seed: int, overrides: list[str], config: Path = CONFIG) -> float:
    """`rlvr train` on the recipe (`config`), as a user runs it; its wall seconds."""
    path = os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rlvr", "train", "--config", str(config),
                    "--run-dir", str(run_dir), "--log-every", "5", f"seed={seed}",
                    *overrides], check=True, env={**os.environ, "PYTHONPATH": path})
    return time.perf_counter() - began


def read_run(run_dir: Path) -> dict:
    """The headline numbers from the run's summary.json and config.yaml."""
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    before, after = summary["eval"]["before"]["row"], summary["eval"]["after"]["row"]
    if "greedy/solved_after_feedback" not in after:
        raise SystemExit(f"{run_dir}: the held-out evaluation ran no episodes "
                         "(episodes.max_turns must be > 1)")
    return {"A": before["greedy/accuracy"], "B": after["greedy/accuracy"],
            "F0": before["greedy/solved_after_feedback"],
            "F1": after["greedy/solved_after_feedback"],
            "score_before": before["greedy/score"], "score_after": after["greedy/score"],
            "held_out": int(after["count"]), "S": summary["train_seconds"],
            "N": summary["steps"], "wall_seconds": summary["wall_seconds"]}


def environment(run_dir: Path) -> str:
    """The run's environment (TASK in the headline), from its resolved config.yaml."""
    import yaml

    config = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))
    return str(config["episodes"]["environment"])


def headline(task: str, r: dict) -> str:
    return (f"multiturn: {task} final-turn success {r['A']:.3f} -> {r['B']:.3f} in "
            f"{r['S']:.0f} s ({r['N']} steps), solved after feedback "
            f"{r['F0']:.3f} -> {r['F1']:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="the run's seed (default 0)")
    parser.add_argument("--run-root", default=None, help="where the run dir goes "
                        "(default: a temporary directory)")
    parser.add_argument("overrides", nargs="*", help="config overrides (default: none)")
    args = parser.parse_args()
    root = Path(args.run_root or tempfile.mkdtemp(prefix="rlvr-multiturn-"))
    run_dir = root / f"seed{args.seed}-{time.strftime('%Y%m%d-%H%M%S')}"
    load = os.getloadavg()[0]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average "
          f"{load:.1f} at start; run dir {run_dir}", flush=True)
    wall = run_demo(run_dir, args.seed, args.overrides)
    result = {**read_run(run_dir), "seed": args.seed, "overrides": args.overrides,
              "process_seconds": round(wall, 1), "load_average_start": round(load, 1),
              "load_average_end": round(os.getloadavg()[0], 1)}
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"multiturn-{time.strftime('%Y%m%d-%H%M')}-seed{args.seed}.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result), flush=True)
    print(headline(environment(run_dir), result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
