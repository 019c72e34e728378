"""The tracker interface: what every experiment tracker (TensorBoard, W&B, MLflow,
trackio) is handed, and the helpers they share.

A tracker is a sink fed from the records the run directory already holds
(metrics.jsonl, evals.jsonl, rollouts.jsonl); the run directory stays the record. Each
backend module wraps its library thinly: numbers go in as they are, names are only
changed where the library refuses them.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from rlvr.runs.rundir import atomic_write_text
from rlvr.textsafe import scrub_text

# A sampled attempt as the tables show it (tracker_rows picks them from rollout lines).
ATTEMPT_COLUMNS = ("prompt_id", "prompt", "completion", "reason", "score", "reward",
                   "advantage", "length")

STATE_FILE = "trackers.json"  # in the run dir: each tracker's run id, for a resume


@dataclass
class RunInfo:
    """What a tracker is started with."""

    name: str  # the run directory's name: unique, and what a person sees in the run list
    run_dir: Path
    config: dict[str, Any]  # the resolved config, as config.yaml holds it
    project: str  # W&B/trackio project, MLflow experiment
    first_step: int = 1  # the first RL step this process logs (> 1: a resumed run)
    options: dict[str, str] = field(default_factory=dict)  # per backend, e.g. wandb_mode

    @property
    def resumed(self) -> bool:
        return self.first_step > 1


class Tracker(ABC):
    """One experiment tracker. Steps are RL steps; held-out rows of step 0 are the
    evaluation before RL. Called on rank 0 only, in step order."""

    name = ""

    @abstractmethod
    def start(self, info: RunInfo) -> None:
        """Open (or, for a resumed run, continue) the tracker's run."""

    @abstractmethod
    def log_metrics(self, step: int, metrics: dict[str, float]) -> None:
        """One step's numbers (finite floats only; see finite_numbers)."""

    def log_evals(self, step: int, row: dict[str, float]) -> None:
        """A held-out evaluation's numbers; by default logged as metrics of that step."""
        self.log_metrics(step, row)

    @abstractmethod
    def log_attempts(self, step: int, rows: Sequence[dict[str, Any]]) -> None:
        """A sample of the step's attempts, each with the ATTEMPT_COLUMNS."""

    @abstractmethod
    def finish(self, status: str) -> None:
        """Close the run; `status` is "finished", "failed" or "killed"."""


def finite_numbers(record: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """The finite numbers of a metrics or evals line, as floats (`prefix` prepended to
    each name). Strings (update/path), NaN (a skipped evaluation) and the step itself
    are left out: every tracker plots numbers, and the JSONL keeps everything."""
    numbers = {}
    for key, value in record.items():
        if key == "step" or not isinstance(value, (int, float)):
            continue
        if math.isfinite(value):
            numbers[prefix + key] = float(value)
    return numbers


def attempt_rows(rollouts: Sequence[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """`count` of a step's rollout lines, evenly spaced, so the sample spans the step's
    prompts (the lines come group by group) and is the same on every run; as table rows
    of ATTEMPT_COLUMNS."""
    if count <= 0 or not rollouts:
        return []
    total, count = len(rollouts), min(count, len(rollouts))
    return [_row(rollouts[i * total // count]) for i in range(count)]


def _row(line: dict[str, Any]) -> dict[str, Any]:
    # Text columns are scrubbed for the trackers' libraries (a lone surrogate read back
    # from a JSON escape, or ESC, breaks or rewrites their displays); rollouts.jsonl
    # keeps the exact text.
    verdict = line.get("verdict") or {}
    text = {"prompt_id": str(line.get("prompt_id", "")), "prompt": line.get("prompt", ""),
            "completion": line.get("completion", ""), "reason": verdict.get("reason", "")}
    return {**{key: scrub_text(str(value)) for key, value in text.items()},
            "score": float(verdict.get("score", 0.0)), "reward": float(line["reward"]),
            "advantage": float(line["advantage"]), "length": int(line.get("length", 0))}


def read_state(run_dir: Path, backend: str) -> dict[str, Any]:
    """What `backend` stored in the run dir's trackers.json ({} when nothing)."""
    path = Path(run_dir) / STATE_FILE
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8")).get(backend, {})


def write_state(run_dir: Path, backend: str, state: dict[str, Any]) -> None:
    """Store `backend`'s run id (and the like) so a resumed run continues that run."""
    path = Path(run_dir) / STATE_FILE
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    data[backend] = state
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")
