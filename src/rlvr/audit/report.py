"""The audit as text (a short report), as JSON, and as a JSONL file of flagged attempts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlvr.audit.detect import Flag
from rlvr.audit.runaudit import AuditResult
from rlvr.runs.rundir import atomic_write_text
from rlvr.textsafe import json_line

MAX_COLUMNS = 8  # windows shown per flag; the JSON output has them all


def format_report(result: AuditResult, flagged_path: str | None = None) -> str:
    lines = [f"rlvr audit {result.run}: {result.steps} steps, {result.attempts} attempts, "
             f"{result.passed} passed (verifier: {result.verifier or 'unknown'}, "
             f"window {result.window} steps)"]
    for flag in sorted(result.flags, key=lambda f: (not f.raised, f.name)):
        lines.append(_flag_line(flag))
        if flag.windows:
            lines.append("    share of passed: " + _window_text(flag.windows))
    if not result.flags:
        lines.append("no suspicious pattern found")
    if flagged_path:
        lines.append(f"{len(result.flagged)} flagged attempt(s) written to {flagged_path} "
                     "(fill in each \"label\")")
    verdict = (f"FLAGGED: {', '.join(f.name for f in result.raised)}" if result.raised
               else "nothing raised")
    lines.append(verdict)
    return "\n".join(lines)


def _flag_line(flag: Flag) -> str:
    status = f"RAISED at step {flag.raised_at}" if flag.raised else "below threshold"
    if flag.name.startswith("form_takeover") or flag.name == "reward_without_heldout":
        return f"{flag.name:<24} {status}: {flag.detail}"
    return (f"{flag.name:<24} {status}: {flag.count} passed attempt(s), "
            f"first seen at step {flag.first_seen}")


def _window_text(windows: list[tuple[int, int, int, int]]) -> str:
    shown = windows if len(windows) <= MAX_COLUMNS else windows[:2] + windows[-(MAX_COLUMNS - 2):]
    cells = [f"{a}-{b} {n / p:.0%} ({n}/{p})" if p else f"{a}-{b} -" for a, b, n, p in shown]
    if len(shown) < len(windows):
        cells.insert(2, "...")
    return " | ".join(cells)


def to_json(result: AuditResult, flagged_path: str | None = None) -> dict[str, Any]:
    return {"run": result.run, "verifier": result.verifier, "steps": result.steps,
            "attempts": result.attempts, "passed": result.passed, "window": result.window,
            "raised": [f.name for f in result.raised],
            "flags": [{"name": f.name, "raised": f.raised, "raised_at": f.raised_at,
                       "first_seen": f.first_seen, "count": f.count, "detail": f.detail,
                       "windows": [{"steps": [a, b], "flagged": n, "passed": p}
                                   for a, b, n, p in f.windows]} for f in result.flags],
            "flagged_attempts": len(result.flagged), "flagged_file": flagged_path}


def write_flagged(result: AuditResult, path: str | Path) -> None:
    # rollout lines as read back: their text may hold anything a JSON escape can
    atomic_write_text(path, "".join(json_line(line) + "\n" for line in result.flagged))
