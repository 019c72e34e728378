"""The `rlvr verify` JSONL contract, one line at a time: a JSON record -> `Case`, a
`Verdict` -> its output line, and an output line -> `Verdict` again.

`rlvr verify` (files), `rlvr serve` (HTTP) and the remote pool (the client side) all go
through these functions, so a case gets the same verdict line whichever way it travels.

Every string of an output line is escaped once (`rlvr.textsafe.escape_text`: lone
surrogates and control characters as `\\uXXXX`, injectively), so any writer can encode
the line; `verdict_from_line` undoes it.
"""

from __future__ import annotations

import math
from typing import Any

from rlvr.errors import UserError
from rlvr.textsafe import escape_text, unescape_text
from rlvr.verifiers.base import REASON_INVALID, Verdict
from rlvr.verifiers.pool import Case

REASON_INVALID_INPUT = "invalid_input"


class CaseError(UserError, ValueError):
    """A record that is valid JSON but not a usable case; `field` names the offending
    field (None: the record itself, e.g. not an object)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def parse_case(record: Any, where: str) -> Case:
    """The `Case` a contract line describes; CaseError (naming `where` and the field)
    when it cannot be one. Checks shapes only: the reference is the verifier's to judge."""
    if not isinstance(record, dict):
        raise CaseError(f"{where}: expected a JSON object, got {type(record).__name__}")
    missing = [k for k in ("verifier", "completion", "reference") if k not in record]
    if missing:
        raise CaseError(f"{where}: missing field(s) {', '.join(missing)}", missing[0])
    for name in ("verifier", "completion"):
        if not isinstance(record[name], str):
            raise CaseError(f"{where}: 'verifier' and 'completion' must be strings", name)
    options = record.get("options") or {}
    if not isinstance(options, dict):
        raise CaseError(f"{where}: 'options' must be an object", "options")
    prompt = record.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        raise CaseError(f"{where}: 'prompt' must be a string", "prompt")
    timeout_s = record.get("timeout_s")
    if timeout_s is not None and not _positive_number(timeout_s):
        raise CaseError(f"{where}: 'timeout_s' must be a positive number of seconds",
                        "timeout_s")
    return Case(record["verifier"], record["completion"], record["reference"], options,
                timeout_s=None if timeout_s is None else float(timeout_s), prompt=prompt)


def _positive_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)


def case_record(case: Case) -> dict[str, Any]:
    """The contract line for `case` (what `parse_case` reads back to an equal Case)."""
    record: dict[str, Any] = {"verifier": case.verifier, "completion": case.completion,
                              "reference": case.reference}
    if case.options:
        record["options"] = case.options
    if case.prompt is not None:
        record["prompt"] = case.prompt
    if case.timeout_s is not None:
        record["timeout_s"] = case.timeout_s
    return record


def verdict_line(verdict: Verdict, where: str = "") -> dict[str, Any]:
    """The output line for `verdict`: its dict, or, for an invalid reference,
    {"score": null, "passed": null, "reason", "error"} with `where` leading the error."""
    if verdict.is_invalid:
        message = str(verdict.details.get("error", "invalid reference"))
        return {"score": None, "passed": None, "reason": verdict.reason,
                "error": escape_text(f"{where}: {message}" if where else message)}
    return verdict.to_dict()


def invalid_input_line(message: str) -> dict[str, Any]:
    """The output line for a record that is not a usable case (see `CaseError`)."""
    return {"score": None, "passed": None, "reason": REASON_INVALID_INPUT,
            "error": escape_text(message)}


def verdict_from_line(line: dict[str, Any]) -> Verdict:
    """The `Verdict` an output line stands for: an invalid reference comes back as
    `Verdict.invalid`, an unusable input as `Verdict.error` (both score 0)."""
    if line.get("score") is None:
        message = unescape_text(str(line.get("error") or "no verdict"))
        if line.get("reason") == REASON_INVALID:
            return Verdict.invalid(message)
        return Verdict.error(message)
    return Verdict.from_dict(line)
