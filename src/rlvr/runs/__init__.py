"""The run directory: config.yaml, metrics.jsonl, rollouts.jsonl, checkpoints/, summary.json."""

from rlvr.runs.progress import Progress
from rlvr.runs.jsonl import JsonlError, read_jsonl
from rlvr.runs.rundir import (ReadOnlyRunDir, RunDir, RunLogError, atomic_write_text,
                              default_run_dir)

__all__ = ["JsonlError", "Progress", "ReadOnlyRunDir", "RunDir", "RunLogError", "atomic_write_text",
           "default_run_dir", "read_jsonl"]
