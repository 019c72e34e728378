"""The embedded default run, end to end: `rlvr train` with no arguments.

Runs the command in a subprocess exactly as a user would, in a fresh run directory,
and reports held-out accuracy before and after RL, the RL steps, the wall time the run
recorded, and the CPU seconds the training process and its verifier workers used (on a
machine shared with other jobs, CPU seconds are what the run would take alone, roughly:
the trainer uses one thread). Repeat with --repeats to see the spread.

    python -m benchmarks.headline.bench_default_run [--repeats 1] [--run-root /tmp/bench-runs]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--run-root", default=None, help="where run dirs go (default: a temp dir)")
    parser.add_argument("overrides", nargs="*", help="config overrides (default: none)")
    args = parser.parse_args()
    root = Path(args.run_root or tempfile.mkdtemp(prefix="rlvr-bench-"))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f} at start", flush=True)
    for i in range(args.repeats):
        result = one_run(root / f"run-{i}", args.overrides)
        result["load_average_end"] = round(os.getloadavg()[0], 1)
        print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
