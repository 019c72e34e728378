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
killed mid-step and resumed has logs equal to an uninterrupted run. That rewrite streams
(line by line into a temp file, then a rename), so its memory does not grow with the
log, and it drops nothing else: a torn last line (a kill mid-write) goes, a damaged line
before it stops the resume with its file and line, leaving the file as it was.

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

from rlvr.errors import UserError
from rlvr.runs.jsonl import JsonlError, JsonlLines
from rlvr.textsafe import json_line


class RunLogError(UserError, ValueError):
    """A run log has a damaged line before its end; the message names it and what to do."""


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
        """Drop log lines of steps > `step` (written after the checkpoint we resume from)
        and a torn last line; RunLogError on any other malformed line (files untouched)."""
        for path in (self.metrics, self.evals, self.rollouts):
            if path.exists():
                _truncate_after(path, step)


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
    """The log's records; a torn last line (a kill mid-write) is left out, a damaged
    line before it is an error (RunLogError), never silently dropped."""
    try:
        return [record for _, record in JsonlLines(path, "tail", missing_ok=True)]
    except JsonlError as exc:
        raise RunLogError(f"{exc}: a damaged line inside the run's log") from None


def _truncate_after(path: Path, step: int) -> None:
    """Copy the lines of steps <= `step` byte for byte into a temp file beside `path`,
    then rename it over `path`; the file is left alone when nothing changes."""
    lines = JsonlLines(path, "tail", raw=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    changed = False  # a line dropped, or a newline added after an unterminated last line
    try:
        with os.fdopen(fd, "wb") as out:
            for _, record, raw in lines:
                if record.get("step", 0) > step or not raw.endswith(b"\n"):
                    changed = True
                if record.get("step", 0) <= step:
                    out.write(raw if raw.endswith(b"\n") else raw + b"\n")
            out.flush()
            os.fsync(out.fileno())
        if changed or lines.torn_tail:
            os.replace(tmp, path)
    except JsonlError as exc:
        raise RunLogError(
            f"{exc}: a damaged line inside the run's log, not a torn last line, so the "
            f"resume stopped and left {path.name} as it was; repair or delete line "
            f"{exc.line}, then resume again") from None
    finally:
        Path(tmp).unlink(missing_ok=True)
