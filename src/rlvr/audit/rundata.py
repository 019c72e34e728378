"""Read what `rlvr audit` needs from a run directory (see rlvr.runs.rundir), with errors
that name the file and line.

Unlike RunDir's own reader, a malformed line is an error here: an audit that silently
skipped lines would undercount. The one exception is an unterminated last line, which
is what a run killed mid-write leaves (and a resume drops).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


class RunDataError(ValueError):
    """The run directory or one of its files cannot be audited; the message says where."""


@dataclass
class RunData:
    path: Path
    verifier: str                        # the verifier that graded the attempts ("" unknown)
    attempts: list[dict[str, Any]]       # rollouts.jsonl lines, with "passed" resolved
    metrics: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


def load_run(path: str | Path, verifier: str | None = None) -> RunData:
    """A run's attempts, metrics and summary; `verifier` overrides the config's."""
    path = Path(path)
    if not path.is_dir():
        raise RunDataError(f"{path}: no such run directory")
    rollouts = path / "rollouts.jsonl"
    if not rollouts.is_file():
        raise RunDataError(f"{rollouts}: missing (the run needs log_rollouts: true)")
    attempts = [_checked_attempt(record, f"{rollouts}:{number}")
                for number, record in read_jsonl(rollouts)]
    metrics = [record for _, record in read_jsonl(path / "metrics.jsonl")]
    summary = _read_json(path / "summary.json")
    name = verifier if verifier is not None else configured_verifier(path / "config.yaml")
    return RunData(path, name, attempts, metrics, summary)


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for each line; RunDataError naming the line otherwise."""
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines) and not text.endswith("\n"):
                break  # cut by a kill mid-write
            raise RunDataError(f"{path}:{number}: malformed JSON: {exc.msg} "
                               f"(column {exc.colno})") from None
        if not isinstance(record, dict):
            raise RunDataError(f"{path}:{number}: expected a JSON object, "
                               f"got {type(record).__name__}")
        records.append((number, record))
    return records


def _checked_attempt(record: dict[str, Any], where: str) -> dict[str, Any]:
    step, verdict = record.get("step"), record.get("verdict")
    if not isinstance(step, int) or isinstance(step, bool):
        raise RunDataError(f"{where}: 'step' must be an integer, got {step!r}")
    if not isinstance(record.get("completion"), str):
        raise RunDataError(f"{where}: 'completion' must be a string")
    if not isinstance(verdict, dict) or not isinstance(verdict.get("passed"), bool):
        raise RunDataError(f"{where}: 'verdict' must be an object with a boolean 'passed'")
    prompt = record.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise RunDataError(f"{where}: 'prompt' must be a string")
    return record


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RunDataError(f"{path}:{exc.lineno}: malformed JSON: {exc.msg}") from None
    return data if isinstance(data, dict) else {}


def configured_verifier(config_path: Path) -> str:
    """reward.verifier, else data.default_verifier (what file rows without a verifier
    and the arithmetic task use), else "" when there is no readable config."""
    if not config_path.is_file():
        return ""
    try:
        config = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise RunDataError(f"{config_path}: malformed YAML: {exc}") from None
    if not isinstance(config, dict):
        return ""
    reward, data = config.get("reward") or {}, config.get("data") or {}
    return str(reward.get("verifier") or data.get("default_verifier") or "")
