"""Audit a whole run: tally every attempt, run the detectors, collect the flagged
passed attempts for labelling."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rlvr.audit.detect import (Flag, attempt_code_flags, form_takeover, reward_without_heldout,
                               tally_attempts)
from rlvr.audit.rundata import RunData

DEFAULT_WINDOW = 10  # steps per detection window (and per report column)


@dataclass
class AuditResult:
    run: str
    verifier: str
    steps: int
    attempts: int
    passed: int
    window: int
    flags: list[Flag] = field(default_factory=list)
    flagged: list[dict[str, Any]] = field(default_factory=list)  # lines for labelling

    @property
    def raised(self) -> list[Flag]:
        return [f for f in self.flags if f.raised]


def audit_run(data: RunData, window: int = DEFAULT_WINDOW) -> AuditResult:
    if window < 1:
        raise ValueError(f"window must be >= 1 step, got {window}")
    tallies, passed = tally_attempts(data.verifier, data.attempts)
    flags = attempt_code_flags(tallies, window) + form_takeover(tallies, window)
    heldout = reward_without_heldout(data.metrics, data.summary, window)
    if heldout is not None:
        flags.append(heldout)
    takeovers = {f.name.split(":", 1)[1]: f.first_seen for f in flags
                 if f.name.startswith("form_takeover:")}
    flagged = []
    for attempt, codes, form in passed:
        since = takeovers.get(form)
        marks = codes + (["form_takeover"] if since is not None and attempt["step"] >= since else [])
        if marks:
            flagged.append(labelling_line(attempt, marks, form))
    return AuditResult(str(data.path), data.verifier, max(tallies, default=0),
                       len(data.attempts), len(passed), window, flags, flagged)


def labelling_line(attempt: dict[str, Any], flags: list[str], form: str) -> dict[str, Any]:
    """One flagged attempt as written for a person to label ("label": "" until then)."""
    return {"step": attempt["step"], "prompt_id": attempt.get("prompt_id"),
            "sample": attempt.get("sample"), "prompt": attempt.get("prompt"),
            "completion": attempt["completion"], "reference": attempt.get("reference"),
            "verdict": attempt["verdict"], "flags": flags, "answer_form": form, "label": ""}
