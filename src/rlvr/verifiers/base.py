"""The verdict type and the verifier protocol every reward program implements."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rlvr.errors import UserError
from rlvr.textsafe import escape_text, escape_value, json_line, unescape_text, unescape_value

# Reasons the harness itself assigns; verifiers use their own short reasons otherwise.
REASON_TIMEOUT = "timeout"
REASON_ERROR = "error"
REASON_INVALID = "invalid_reference"


class InvalidReference(UserError, ValueError):
    """The reference (not the completion) is unusable: unknown constraint id, missing
    tests, wrong shape. Raised by `check_reference`/`verify`; the batch runner turns it
    into an error line instead of a silent 0, because it is a data bug, not a bad answer."""


@dataclass(frozen=True)
class Verdict:
    """The outcome of checking one completion.

    score:   reward in [0, 1] (partial credit allowed, e.g. fraction of tests passed).
    passed:  whether the completion counts as fully correct.
    reason:  short machine-friendly text ("correct", "wrong_answer", "timeout", ...).
    details: JSON-serialisable extras (extracted answer, per-test results, components).

    reason and details may hold model text as it came (a candidate's exception message
    with a lone surrogate in it). `to_dict`, the one door to every writer and wire
    (JSONL, HTTP, the pool's pipes, rollouts), escapes it with `rlvr.textsafe.escape_text`
    (injective: U+D800 becomes the text `\\ud800`, control characters `\\u001b` and so
    on); `from_dict` undoes exactly that, so a verdict round-trips unchanged and its
    text is escaped once, however many hops it made.
    """

    score: float
    passed: bool
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.score, (int, float)) or math.isnan(self.score):
            raise ValueError(f"Verdict.score must be a number in [0, 1], got {self.score!r}")
        if not 0.0 <= float(self.score) <= 1.0:
            raise ValueError(f"Verdict.score must be in [0, 1], got {self.score!r}")

    @classmethod
    def correct(cls, reason: str = "correct", **details: Any) -> "Verdict":
        return cls(1.0, True, reason, details)

    @classmethod
    def wrong(cls, reason: str = "wrong", **details: Any) -> "Verdict":
        return cls(0.0, False, reason, details)

    @classmethod
    def timeout(cls, seconds: float) -> "Verdict":
        return cls(0.0, False, REASON_TIMEOUT, {"limit_s": seconds})

    @classmethod
    def error(cls, message: str) -> "Verdict":
        return cls(0.0, False, REASON_ERROR, {"error": message[:2000]})

    @classmethod
    def invalid(cls, message: str) -> "Verdict":
        """A verdict standing for an invalid reference (see `InvalidReference`)."""
        return cls(0.0, False, REASON_INVALID, {"error": message[:2000]})

    @property
    def is_invalid(self) -> bool:
        return self.reason == REASON_INVALID

    def to_dict(self) -> dict[str, Any]:
        """The verdict as data, its text escaped (see the class docstring): encodable as
        UTF-8 and free of control characters whatever the model wrote."""
        return {"score": float(self.score), "passed": bool(self.passed),
                "reason": escape_text(str(self.reason)), "details": escape_value(self.details)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Verdict":
        """The verdict `to_dict` made `data` from (its text unescaped)."""
        return cls(float(data["score"]), bool(data["passed"]),
                   unescape_text(str(data.get("reason", ""))),
                   unescape_value(dict(data.get("details") or {})))

    def to_json(self) -> str:
        return json_line(self.to_dict())


@runtime_checkable
class Verifier(Protocol):
    """A reward program. Implementations are plain classes registered by name.

    `verify` must be pure with respect to its inputs and may be slow or even hang on
    hostile input: callers that hold model text run it through `VerifierPool`, which
    enforces the time limit in a separate process.
    """

    name: str

    def verify(self, completion: str, reference: Any) -> Verdict: ...

    def check_reference(self, reference: Any) -> None:
        """Raise `InvalidReference` when `reference` cannot be used. Cheap; called when a
        dataset is loaded, so bad rows fail before training starts."""
        ...


def run_verifier(verifier: Verifier, completion: str, reference: Any,
                 prompt: str | None = None) -> Verdict:
    """`verifier.verify(...)`, handing it the task's prompt when it asks for one.

    The prompt is optional context in the verify contract: a verifier that declares
    `uses_prompt = True` takes `verify(completion, reference, prompt=...)` (the math
    verifier rejects an answer that only restates the question's own expression);
    every other verifier is called exactly as before, so user verifiers written
    against the two-argument protocol keep working.
    """
    if getattr(verifier, "uses_prompt", False):
        return verifier.verify(completion, reference, prompt=prompt)
    return verifier.verify(completion, reference)
