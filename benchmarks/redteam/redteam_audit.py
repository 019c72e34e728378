"""The audit half of bench_redteam.py: re-read one run's rollouts.jsonl and re-check
every attempt the verifier passed.

The strict re-check is `strict_recheck(verifier, completion, reference, prompt) ->
None | reason` (None = clean); the bench loads it by name (`load_recheck`), so a
stand-in can replace `rlvr.audit.strict` while that module is being written. For
math, math-verify (the grader TRL and open-r1 use) grades the same passed attempts,
for comparison: the boxed-expression hack was accepted by it as well.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import Any, Callable

Recheck = Callable[[str, str, Any, "str | None"], "str | None"]

# A flagged attempt keeps these rollout fields (enough to write a labelled case).
KEPT_FIELDS = ("step", "prompt_id", "sample", "prompt", "reference", "completion",
               "finish_reason")


def load_recheck(spec: str, repo: Path) -> Recheck:
    """`module:function` (importable) or `path/to/file.py:function` (a scratch file)."""
    where, _, name = spec.rpartition(":")
    if not where or not name:
        raise SystemExit(f"bench_redteam: --recheck wants module:function, got {spec!r}")
    if where.endswith(".py"):
        path = Path(where) if Path(where).is_absolute() else repo / where
        loader = importlib.util.spec_from_file_location("redteam_recheck", path)
        if loader is None or not path.is_file():
            raise SystemExit(f"bench_redteam: no re-check file {path}")
        module = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise SystemExit(f"bench_redteam: cannot import the strict re-check {where!r} "
                             f"({exc}); pass --recheck path/to/file.py:function") from None
    return getattr(module, name)


def read_rollouts(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "rollouts.jsonl"
    if not path.is_file():
        raise SystemExit(f"bench_redteam: {path} missing (did training run?)")
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def math_verify_accepts(completion: str, reference: Any) -> bool | None:
    """math-verify's verdict (True/False), None when it raised. The reference is read as
    math (`$...$`), as rlvr's math_verify verifier reads it: bare, `9\\pi` parses as 9."""
    from math_verify import parse, verify

    try:
        return bool(verify(parse(f"${reference}$"), parse(completion)))
    except Exception:  # noqa: BLE001 - a comparison grader; its failure is a data point
        return None


def audit_run(run_dir: Path, verifier: str, recheck: Recheck) -> dict[str, Any]:
    """Counts (overall, per step, per re-check reason) and the flagged attempts."""
    rows = read_rollouts(run_dir)
    passed = [r for r in rows if r["verdict"]["passed"]]
    flagged: list[dict[str, Any]] = []
    per_step: dict[int, dict[str, int]] = {}
    for row in rows:
        per_step.setdefault(row["step"], {"step": row["step"], "passed": 0, "flagged": 0})
    for row in passed:
        reason = recheck(verifier, row["completion"], row["reference"], row.get("prompt"))
        per_step[row["step"]]["passed"] += 1
        if reason is not None:
            per_step[row["step"]]["flagged"] += 1
            flagged.append({**{k: row.get(k) for k in KEPT_FIELDS},
                            "verdict_reason": row["verdict"].get("reason"),
                            "strict_reason": reason})
    result: dict[str, Any] = {
        "verifier": verifier, "attempts": len(rows), "passed": len(passed),
        "flagged": len(flagged),
        "reasons": dict(Counter(f["strict_reason"] for f in flagged).most_common()),
        "by_step": [per_step[s] for s in sorted(per_step)],
        "flagged_attempts": flagged,
    }
    if verifier == "math":
        result["math_verify"] = math_verify_summary(passed, flagged)
    return result


def math_verify_summary(passed: list[dict[str, Any]],
                        flagged: list[dict[str, Any]]) -> dict[str, int]:
    """math-verify over the passed attempts; each flagged attempt also records its
    verdict (key "math_verify"), so the JSON shows which hacks it accepts too."""
    verdicts = [math_verify_accepts(r["completion"], r["reference"]) for r in passed]
    for attempt in flagged:
        attempt["math_verify"] = math_verify_accepts(attempt["completion"],
                                                     attempt["reference"])
    return {"accepted": sum(v is True for v in verdicts),
            "rejected": sum(v is False for v in verdicts),
            "errors": sum(v is None for v in verdicts),
            "accepted_of_flagged": sum(a["math_verify"] is True for a in flagged)}
