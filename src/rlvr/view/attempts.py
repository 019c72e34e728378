"""A step's attempts as the page shows them, and the strict re-grade of a run.

Each attempt carries the audit's codes (rlvr.audit.detect.attempt_flags: the strict
re-check for the run's verifier) when the verifier passed it, so an attempt that was
paid but would fail stricter rules is marked on the page. Per step, the share of
attempts that pass *and* survive the re-check is the run's strict accuracy, drawn
beside the reward: a policy that learns to fool its checker shows as a reward that
climbs while strict accuracy does not.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from threading import Lock
from typing import Any

from rlvr.audit.detect import attempt_flags
from rlvr.audit.episodes import counts_as_passed, episode_codes
from rlvr.audit.strict import RULES
from rlvr.view.episodes import episode_view
from rlvr.view.rollouts import RolloutsFile, StepLines

MAX_TEXT = 20_000  # characters of a prompt or completion sent to the page (rest cut, said)


def attempt_view(record: dict[str, Any], verifier: str) -> dict[str, Any]:
    """One attempt for the page: text, verdict, reward, advantage, tokens, audit flags,
    and its episode (rlvr.view.episodes; None for a plain single-turn attempt)."""
    verdict = record.get("verdict") if isinstance(record.get("verdict"), dict) else {}
    passed = bool(verdict.get("passed"))
    flags = audit_codes(verifier, record)
    completion = str(record.get("completion", ""))
    return {"sample": record.get("sample"), "completion": completion[:MAX_TEXT],
            "cut": max(0, len(completion) - MAX_TEXT),
            "passed": passed, "score": verdict.get("score"),
            "reason": str(verdict.get("reason", "")), "details": verdict.get("details") or {},
            "reward": record.get("reward"), "advantage": record.get("advantage"),
            "length": record.get("length"), "finish_reason": record.get("finish_reason"),
            "flags": flags, "episode": episode_view(record)}


def audit_codes(verifier: str, record: dict[str, Any]) -> list[str]:
    """The audit's codes for a paid attempt (rlvr.audit.detect.attempt_flags); without a
    known verifier, the episode codes only (they need none)."""
    if not counts_as_passed(record):
        return []
    return attempt_flags(verifier, record) if verifier else episode_codes(record)


def group_attempts(lines: StepLines, verifier: str) -> dict[str, Any]:
    """A step's attempts grouped by prompt, groups in the order the trainer wrote them."""
    groups: dict[str, dict[str, Any]] = {}
    for record in lines.records:
        key = json.dumps(record.get("prompt_id"))
        group = groups.get(key)
        if group is None:
            group = groups[key] = {"prompt_id": record.get("prompt_id"),
                                   "prompt": str(record.get("prompt") or "")[:MAX_TEXT],
                                   "reference": _short(record.get("reference")),
                                   "attempts": []}
        group["attempts"].append(attempt_view(record, verifier))
    return {"step": lines.step, "groups": list(groups.values()),
            "problems": [p.message for p in lines.problems]}


def follow_prompt(rollouts: RolloutsFile, prompt_id: Any, verifier: str,
                  limit: int = 2000) -> list[dict[str, Any]]:
    """Every step's attempts at one prompt: [{"step", "attempts": [...]}], by step."""
    needle = '"prompt_id": ' + json.dumps(prompt_id, ensure_ascii=False)
    by_step: dict[int, list[dict[str, Any]]] = {}
    for record in rollouts.find(needle, limit=limit):
        if record.get("prompt_id") == prompt_id and isinstance(record.get("step"), int):
            by_step.setdefault(record["step"], []).append(attempt_view(record, verifier))
    return [{"step": s, "attempts": by_step[s]} for s in sorted(by_step)]


def search_prompts(rollouts: RolloutsFile, text: str, limit: int = 200,
                   deadline: float | None = None) -> list[dict[str, Any]]:
    """Prompts (id, text, steps seen) whose text contains `text`, over the whole file
    (an empty `text` matches nothing). The search runs on the file's bytes, so `text`
    is matched as JSON escapes it; it stops at the monotonic `deadline`."""
    if not text:
        return []
    needle = json.dumps(text, ensure_ascii=False)[1:-1]
    found: dict[str, dict[str, Any]] = {}
    for record in rollouts.find(needle, limit=limit * 64, deadline=deadline):
        prompt = str(record.get("prompt") or "")
        if text.lower() not in prompt.lower() and text not in prompt:
            continue  # the needle was in the completion or elsewhere
        key = json.dumps(record.get("prompt_id"))
        entry = found.setdefault(key, {"prompt_id": record.get("prompt_id"),
                                       "prompt": prompt[:500], "steps": []})
        if record.get("step") not in entry["steps"]:
            entry["steps"].append(record.get("step"))
        if len(found) >= limit:
            break
    return list(found.values())


# --- the strict re-grade, step by step -------------------------------------------------

def strict_tally(records: Iterable[dict[str, Any]], verifier: str) -> dict[int, list[int]]:
    """{step: [attempts, passed, passed and clean under the strict re-check]}."""
    tally: dict[int, list[int]] = {}
    for record in records:
        step = record.get("step")
        if not isinstance(step, int):
            continue
        row = tally.setdefault(step, [0, 0, 0])
        row[0] += 1
        if counts_as_passed(record):
            row[1] += 1
            if not audit_codes(verifier, record):
                row[2] += 1
    return tally


def _tally_steps(path: str, steps: list[int], verifier: str) -> dict[int, list[int]]:
    """Worker side: read the given steps of a rollouts file and tally them."""
    rollouts = RolloutsFile(path)
    tally: dict[int, list[int]] = {}
    for step in steps:
        tally.update(strict_tally(rollouts.read_step(step).records, verifier))
    return tally


@dataclass
class StrictCurve:
    """The strict re-grade of a run, computed in a worker process a batch of steps at a
    time (the regexes of a 1 GB run take minutes; the page must not wait for them, nor
    the server's thread share the interpreter with them). Steps already tallied are not
    re-read; a live run's new steps are tallied as they appear."""

    path: Path
    verifier: str
    batch: int = 25
    tally: dict[int, list[int]] = field(default_factory=dict)
    pending: Future | None = None
    lock: Lock = field(default_factory=Lock)

    def poll(self, steps: list[int], pool: ProcessPoolExecutor | None) -> dict[str, Any]:
        """The curve so far; starts the next batch of untallied steps when idle. Without
        a pool (export) every step is tallied here, now. A verifier the strict re-check
        has no rules for (a reward model, a judge, a user's verifier) gets no curve: its
        passes would all "survive" and read as honest."""
        if self.verifier not in RULES:  # nothing is ever tallied
            return {**self.curve(done=True), "no_rules": True}
        with self.lock:
            if self.pending is not None and self.pending.done():
                try:
                    self.tally.update(self.pending.result())
                finally:
                    self.pending = None
            todo = [s for s in steps if s not in self.tally]
            if todo and pool is None:
                self.tally.update(_tally_steps(str(self.path), todo, self.verifier))
                todo = []
            elif todo and self.pending is None:
                self.pending = pool.submit(_tally_steps, str(self.path), todo[:self.batch],
                                           self.verifier)
            return self.curve(done=not todo)

    def curve(self, done: bool) -> dict[str, Any]:
        steps = sorted(self.tally)
        rows = [self.tally[s] for s in steps]
        return {"done": done, "verifier": self.verifier, "x": steps,
                "passed": [p / n if n else None for n, p, _ in rows],
                "strict": [c / n if n else None for n, _, c in rows],
                "flagged": [p - c for _, p, c in rows]}


def _short(value: Any, limit: int = 2000) -> Any:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f" ... ({len(text) - limit} more)"
