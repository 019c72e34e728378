"""One run directory as `rlvr view` reads it: small files whole (metrics, evaluations,
summary, config), rollouts by step (rlvr.view.rollouts). Read-only; every file is read
again when it changes, so a run that is still training is followed.

Nothing here raises on a run's content: a missing file is named in `notes`, a line cut
by a crash is reported as such, a malformed line is counted and named.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rlvr.runs.jsonl import read_jsonl
from rlvr.runs.verifier import run_verifier
from rlvr.view.episodes import episode_curves
from rlvr.view.rollouts import RolloutsFile, file_identity

# The curves the page draws, in order: (metrics.jsonl key, label). Keys a run does not
# log are left out of its chart; pass@k/maj@k keys of evals.jsonl are added as found,
# and a multi-turn run's episode/* metrics after these (rlvr.view.episodes).
CURVES: list[tuple[str, str]] = [
    ("reward/mean", "reward"),
    ("accuracy", "training accuracy (verifier)"),
    ("eval/accuracy", "held-out accuracy"),
    ("kl", "KL to reference"),
    ("approx_kl", "KL to the sampler (approx.)"),
    ("entropy", "entropy"),
    ("response_length/mean", "response length (tokens)"),
    ("clip_frac", "clip fraction"),
    ("clip_frac_low", "clip fraction (low)"),
    ("clip_frac_high", "clip fraction (high)"),
    ("time/step", "seconds per step"),
]
LIVE_SECONDS = 120.0  # a run without summary.json written to this recently is "running"


class JsonlTable:
    """A small JSONL file (one object per line) re-read only when it changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.identity: tuple[int, int, int] | None = None
        self.records: list[dict[str, Any]] = []
        self.bad_lines: list[int] = []        # 1-based numbers of malformed lines
        self.partial_tail = False              # an unterminated last line

    def read(self) -> list[dict[str, Any]]:
        identity = file_identity(self.path)
        if identity == self.identity:
            return self.records
        self.identity = identity
        self.records, self.bad_lines, self.partial_tail = [], [], False
        if identity is None:
            return self.records
        # a live run's viewer shows what it can and says what it skipped
        lines = read_jsonl(self.path, "skip", missing_ok=True)
        self.records = [record for _, record in lines]
        self.bad_lines, self.partial_tail = lines.bad_lines, lines.torn_tail
        return self.records


@dataclass
class ViewRun:
    path: Path
    name: str
    metrics: JsonlTable = field(init=False)
    evals: JsonlTable = field(init=False)
    rollouts: RolloutsFile = field(init=False)

    def __post_init__(self) -> None:
        self.metrics = JsonlTable(self.path / "metrics.jsonl")
        self.evals = JsonlTable(self.path / "evals.jsonl")
        self.rollouts = RolloutsFile(self.path / "rollouts.jsonl")

    @classmethod
    def open(cls, path: str | Path) -> ViewRun:
        path = Path(path)
        if not path.is_dir():
            raise FileNotFoundError(f"{path}: no such run directory")
        if not any((path / f).exists() for f in ("config.yaml", "metrics.jsonl",
                                                  "rollouts.jsonl")):
            raise FileNotFoundError(f"{path}: not a run directory (no config.yaml, "
                                    "metrics.jsonl or rollouts.jsonl in it)")
        return cls(path.resolve(), path.resolve().name)

    def config(self) -> dict[str, Any]:
        try:
            data = yaml.safe_load((self.path / "config.yaml").read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            return {}
        return data if isinstance(data, dict) else {}

    def verifier(self) -> str:
        return run_verifier(self.config())

    def summary(self) -> dict[str, Any]:
        try:
            data = json.loads((self.path / "summary.json").read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def status(self) -> str:
        if (self.path / "summary.json").is_file():
            return "finished"
        newest = max((p.stat().st_mtime for p in (self.metrics.path, self.rollouts.path)
                      if p.is_file()), default=0.0)
        return "running" if time.time() - newest < LIVE_SECONDS else "stopped"

    def notes(self) -> list[str]:
        """What a person should know about the files: missing, cut, malformed."""
        notes = []
        for table in (self.metrics, self.evals):
            table.read()
            if table.identity is None:
                notes.append(f"{table.path}: not found")
            if table.partial_tail:
                notes.append(f"{table.path}: the last line is incomplete (cut mid-write, "
                             "e.g. by a crash); it is not shown")
            if table.bad_lines:
                notes.append(f"{table.path}: {len(table.bad_lines)} malformed line(s), "
                             f"first at line {table.bad_lines[0]}; skipped")
        if not self.rollouts.exists():
            notes.append(f"{self.rollouts.path}: not found (the run's attempts are "
                         "logged with log_rollouts: true)")
        else:
            tail = self.rollouts.partial_tail()
            if tail:
                notes.append(f"{self.rollouts.path}: the last line is incomplete ({tail} "
                             "bytes cut mid-write, e.g. by a crash); it is not shown")
        return notes

    def overview(self) -> dict[str, Any]:
        """Everything the page's header and curves need (a few KB per 100 steps)."""
        metrics = self.metrics.read()
        steps = sorted({m["step"] for m in metrics if isinstance(m.get("step"), int)})
        if not steps:  # no metrics yet (or lost): the rollouts' own step range
            span = self.rollouts.first_and_last_step()
            steps = list(range(int(span[0]), int(span[1]) + 1)) if span else []
        evals = eval_series(self.evals.read())
        curves = curve_series(metrics)
        if evals:  # metrics' eval/accuracy is the same numbers less before and after RL
            curves.pop("eval/accuracy", None)
        return {"name": self.name, "path": str(self.path), "status": self.status(),
                "verifier": self.verifier(), "steps": steps, "curves": curves,
                "evals": evals or older_evals(metrics, self.summary()),
                "summary": _summary_headline(self.summary()), "notes": self.notes()}


def curve_series(metrics: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{key: {"label", "x": steps, "y": values}} for each known curve the run logged;
    episode curves also say their "chart" (several keys share one) and "trace"."""
    series = {}
    for key, label in CURVES:
        points = [(m["step"], m.get(key)) for m in metrics if isinstance(m.get("step"), int)]
        points = [(x, y) for x, y in points if _number(y)]
        if points:
            series[key] = {"label": label, "x": [p[0] for p in points],
                           "y": [p[1] for p in points]}
    series.update(episode_curves(metrics))
    return series


def eval_series(evals: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Held-out metrics by step (step 0 = before RL): greedy accuracy, pass@k, maj@k."""
    keys = sorted({k for e in evals for k, v in e.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)
                   and (k.endswith("accuracy") or "pass@" in k or "maj@" in k)})
    series = {}
    for key in keys:
        points = [(e["step"], e[key]) for e in evals
                  if isinstance(e.get("step"), int) and isinstance(e.get(key), (int, float))]
        if points:
            series[key] = {"label": f"held-out {key}", "x": [p[0] for p in points],
                           "y": [p[1] for p in points]}
    return series


def older_evals(metrics: list[dict[str, Any]], summary: dict[str, Any]) -> dict[str, Any]:
    """Held-out greedy accuracy of a run from before evals.jsonl existed: summary.json's
    "before" (step 0) and "after" (its last step) around metrics' eval/accuracy."""
    evals = summary.get("eval") or {}
    points = []
    if isinstance((evals.get("before") or {}).get("accuracy"), (int, float)):
        points.append((0, evals["before"]["accuracy"]))
    points += [(m["step"], m["eval/accuracy"]) for m in metrics
               if isinstance(m.get("step"), int) and _number(m.get("eval/accuracy"))]
    after = (evals.get("after") or {}).get("accuracy")
    if isinstance(after, (int, float)) and isinstance(summary.get("steps"), int):
        points.append((summary["steps"], after))
    if not points:
        return {}
    return {"greedy/accuracy": {"label": "held-out greedy/accuracy",
                                "x": [p[0] for p in points], "y": [p[1] for p in points]}}


def _number(value: Any) -> bool:
    """A finite int or float (NaN marks a step without the value; bools are not numbers)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _summary_headline(summary: dict[str, Any]) -> dict[str, Any]:
    evals = summary.get("eval") or {}
    before, after = evals.get("before") or {}, evals.get("after") or {}
    return {"steps": summary.get("steps"), "train_seconds": summary.get("train_seconds"),
            "held_out_before": before.get("accuracy"), "held_out_after": after.get("accuracy")}
