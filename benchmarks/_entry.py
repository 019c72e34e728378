"""The short benchmark paths: `python benchmarks/bench_X.py [args]` runs the package
module `benchmarks.<folder>.bench_X` as `python -m` would, from any directory (the
repository and its src/ put on the path first). Each benchmarks/bench_*.py is two lines
calling `run` (tests/test_bench_entry_points.py)."""

import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository: `benchmarks` and src/ live there


def run(module: str) -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "src")]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
