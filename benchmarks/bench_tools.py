"""`python benchmarks/bench_tools.py [args]`: the same as
`PYTHONPATH=src python -m benchmarks.headline.bench_tools [args]` (the module, with its docstring,
lives in benchmarks/headline/; this entry point keeps the short path working)."""

import runpy
import sys
from pathlib import Path

if __name__ == "__main__":
    ROOT = Path(__file__).resolve().parents[1]  # the repository: `benchmarks` and src/ live there
    sys.path[:0] = [str(ROOT), str(ROOT / "src")]
    runpy.run_module("benchmarks.headline.bench_tools", run_name="__main__", alter_sys=True)
