"""Plain files of one run (docs/contracts.md, "Runs").

    config.yaml      the resolved config
    metrics.jsonl    one JSON object per RL step ({"step": k, ...})
    evals.jsonl      one JSON object per held-out evaluation ({"step": k, "train_seconds",
                     "wall_seconds", "greedy/accuracy", ...}; step 0 = before RL)
    evals/           step-NNNNNN.jsonl: each held-out evaluation's greedy answers
    rollouts.jsonl   one JSON object per attempt (step, prompt id, prompt text, reference,
                     completion, verdict, reward, advantage): `rlvr audit` re-reads it
    checkpoints/     step-NNNNNN/ dirs (see rlvr.training.checkpoint)
    summary.json     written at the end
    trackers.json    the experiment trackers' run ids (W&B, MLflow), so a resume continues
                     them; their own files beside it: tensorboard/, wandb/, mlflow.db
                     (rlvr.runs.trackers, logging.backends)

Whole files are written atomically (temp file + rename). The JSONL logs are appended a
step at a time; on resume, lines of steps after the checkpoint are dropped, so a run
killed mid-step and resumed has logs equal to an uninterrupted run.

Lines are written with `rlvr.textsafe.json_line`: whatever text a record holds (a lone
surrogate, a control character, U+2028), the line encodes as UTF-8 and stays one line.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

from rlvr.textsafe import json_line


def default_run_dir(name: str, root: str | Path = "runs") -> Path:
    """runs/NAME-YYYYmmdd-HHMMSS under the current directory (a suffix if it exists)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = Path(root) / f"{name}-{stamp}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write `text` to `path` so readers see the old file or the new one, never half."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class RunDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.config = self.path / "config.yaml"
        self.metrics = self.path / "metrics.jsonl"
        self.evals = self.path / "evals.jsonl"
        self.rollouts = self.path / "rollouts.jsonl"
        self.summary = self.path / "summary.json"
        self.checkpoints = self.path / "checkpoints"

    def create(self) -> "RunDir":
        self.checkpoints.mkdir(parents=True, exist_ok=True)
        return self

    def append_metrics(self, record: dict[str, Any]) -> None:
        _append_lines(self.metrics, [record])

    def append_evals(self, record: dict[str, Any]) -> None:
        _append_lines(self.evals, [record])

    def write_eval_answers(self, step: int, answers: Iterable[dict[str, Any]]) -> None:
        directory = self.path / "evals"
        directory.mkdir(exist_ok=True)
        atomic_write_text(directory / f"step-{step:06d}.jsonl",
                          "".join(json_line(a) + "\n" for a in answers))

    def read_evals(self) -> list[dict[str, Any]]:
        return _read_lines(self.evals)

    def append_rollouts(self, records: Iterable[dict[str, Any]]) -> None:
        _append_lines(self.rollouts, records)

    def write_summary(self, summary: dict[str, Any]) -> None:
        atomic_write_text(self.summary, json.dumps(summary, indent=2) + "\n")

    def read_metrics(self) -> list[dict[str, Any]]:
        return _read_lines(self.metrics)

    def truncate_logs_after(self, step: int) -> None:
        """Drop log lines of steps > `step` (written after the checkpoint we resume from)."""
        for path in (self.metrics, self.evals, self.rollouts):
            if path.exists():
                kept = [r for r in _read_lines(path) if r.get("step", 0) <= step]
                atomic_write_text(path, "".join(json_line(r) + "\n"
                                                for r in kept))


class ReadOnlyRunDir(RunDir):
    """The run directory as a rank other than 0 sees it (torchrun): it reads the config
    and checkpoints; rank 0 alone writes logs, evaluations and the summary."""

    def create(self) -> "RunDir":
        return self

    def append_metrics(self, record: dict[str, Any]) -> None:
        pass

    def append_evals(self, record: dict[str, Any]) -> None:
        pass

    def write_eval_answers(self, step: int, answers: Iterable[dict[str, Any]]) -> None:
        pass

    def append_rollouts(self, records: Iterable[dict[str, Any]]) -> None:
        pass

    def write_summary(self, summary: dict[str, Any]) -> None:
        pass

    def truncate_logs_after(self, step: int) -> None:
        pass


def _append_lines(path: Path, records: Iterable[dict[str, Any]]) -> None:
    text = "".join(json_line(r) + "\n" for r in records)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


def _read_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    records = []
    # split on "\n" only: str.splitlines also breaks on U+2028 and friends, which an
    # older writer may have left raw inside a JSON string
    for line in path.read_text(encoding="utf-8").split("\n"):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a kill mid-write: ignore it
            continue
    return records
