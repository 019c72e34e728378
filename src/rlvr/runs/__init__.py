"""The run directory: config.yaml, metrics.jsonl, rollouts.jsonl, checkpoints/, summary.json."""

from rlvr.runs.progress import Progress
from rlvr.runs.rundir import ReadOnlyRunDir, RunDir, atomic_write_text, default_run_dir

__all__ = ["Progress", "ReadOnlyRunDir", "RunDir", "atomic_write_text", "default_run_dir"]
