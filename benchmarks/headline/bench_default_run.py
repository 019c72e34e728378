"""The embedded default run, end to end: `rlvr train` with no arguments.

Runs the command in a subprocess exactly as a user would, in a fresh run directory,
and reports held-out accuracy before and after RL, the RL steps, the wall time the run
recorded, and the CPU seconds the training process and its verifier workers used (on a
machine shared with other jobs, CPU seconds are what the run would take alone, roughly:
the trainer uses one thread). Repeat with --repeats to see the spread.

    python -m benchmarks.headline.bench_default_run [--repeats 1] [--run-root /tmp/bench-runs]

The sweep across seeds and thread counts (1 and 2 torch threads sum in different orders,
as another CPU's kernels would): one run per (seed, threads) pair, `seed=S
model.threads=T`, each alone on the machine, then the line

    python -m benchmarks.headline.bench_default_run --seeds 0,1,2,3,4 --threads 1,2
    demo: 10 runs, held-out after min A, median B, max C; lift min L points; seconds max S

A, B, C: held-out accuracy after RL over the runs; L: the smallest after - before, in
points (x100); S: the longest run's own wall clock (summary.json's wall_seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import REPO

SRC = REPO / "src"


def one_run(run_dir: Path, extra: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rlvr", "train", "--run-dir", str(run_dir), "--quiet",
                    *extra], check=True, env=env)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = json.loads((run_dir / "summary.json").read_text())
    return {"before": summary["eval"]["before"]["accuracy"],
            "after": summary["eval"]["after"]["accuracy"],
            "held_out": summary["eval"]["after"]["n"], "steps": summary["steps"],
            "wall_seconds_summary": round(summary["wall_seconds"], 1),
            "wall_seconds_process": round(wall, 1), "cpu_seconds": round(cpu, 1)}


def sweep_line(results: list[dict]) -> str:
    """The sweep's summary line (see the module docstring)."""
    after = sorted(r["after"] for r in results)
    middle = len(after) // 2
    median = after[middle] if len(after) % 2 else (after[middle - 1] + after[middle]) / 2
    lift = min(r["after"] - r["before"] for r in results)
    seconds = max(r["wall_seconds_summary"] for r in results)
    return (f"demo: {len(results)} runs, held-out after min {after[0]:.3f}, median "
            f"{median:.3f}, max {after[-1]:.3f}; lift min {100 * lift:.1f} points; "
            f"seconds max {seconds:.0f}")


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--run-root", default=None, help="where run dirs go (default: a temp dir)")
    parser.add_argument("--seeds", type=_ints, default=None,
                        help="comma-separated seeds: one run per seed and thread count")
    parser.add_argument("--threads", type=_ints, default=None,
                        help="comma-separated torch thread counts (with --seeds; default: 0 "
                             "= every core)")
    parser.add_argument("overrides", nargs="*", help="config overrides (default: none)")
    args = parser.parse_args()
    root = Path(args.run_root or tempfile.mkdtemp(prefix="rlvr-bench-"))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f} at start", flush=True)
    if args.seeds is None:
        plan = [(f"run-{i}", []) for i in range(args.repeats)]
    else:
        plan = [(f"seed{seed}-threads{threads}", [f"seed={seed}", f"model.threads={threads}"])
                for seed in args.seeds for threads in (args.threads or [0])]
    results = []
    for name, extra in plan:
        result = one_run(root / name, [*args.overrides, *extra])
        result.update(run=name, load_average_end=round(os.getloadavg()[0], 1))
        print(json.dumps(result), flush=True)
        results.append(result)
    if args.seeds is not None:
        print(sweep_line(results), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
