"""Read what `rlvr audit` needs from a run directory (see rlvr.runs.rundir), with errors
that name the file and line.

A malformed line is an error here (rlvr.runs.read_jsonl's "tail" policy): an audit
that silently skipped lines would undercount. The one exception is an unterminated last
line, which is what a run killed mid-write leaves (and a resume drops).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.errors import UserError
from rlvr.runs.jsonl import JsonlError, JsonlLines
from rlvr.runs.verifier import RunConfigError, run_verifier


class RunDataError(UserError, ValueError):
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
    try:
        name = verifier if verifier is not None else run_verifier(path)
    except RunConfigError as exc:
        raise RunDataError(str(exc)) from None
    return RunData(path, name, attempts, metrics, summary)


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for each line; RunDataError naming the line otherwise."""
    try:
        return list(JsonlLines(path, "tail", missing_ok=True))
    except JsonlError as exc:
        raise RunDataError(str(exc)) from None


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
    if "episode" in record:
        _check_episode(record["episode"], where)
    return record


def _check_episode(block: Any, where: str) -> None:
    """The episode block's fields the audit reads (docs/contracts.md, "Episodes")."""
    if not isinstance(block, dict):
        raise RunDataError(f"{where}: 'episode' must be an object")
    if not isinstance(block.get("end_reason"), str):
        raise RunDataError(f"{where}: 'episode.end_reason' must be a string")
    messages = block.get("messages", [])
    if not isinstance(messages, list):
        raise RunDataError(f"{where}: 'episode.messages' must be a list")
    for index, message in enumerate(messages):
        if not (isinstance(message, dict) and isinstance(message.get("role"), str)
                and isinstance(message.get("content"), str)):
            raise RunDataError(f"{where}: 'episode.messages[{index}]' must be an object "
                               "with string 'role' and 'content'")


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RunDataError(f"{path}:{exc.lineno}: malformed JSON: {exc.msg}") from None
    return data if isinstance(data, dict) else {}
