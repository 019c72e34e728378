"""`code_feedback`: write a program, read why the tests failed, try again.

The task record is a code task (its reference one of the code verifier's shapes:
HumanEval `test`, MBPP `asserts` or `io` cases). Each model turn is an attempt, graded
by the code verifier (rlvr.verifiers.code, its sandbox: docs/CODE_SANDBOX.md). A pass
ends the episode with reward 1 (less `turn_cost` for each attempt before it, floored at
0). A failure sends back, as the next user turn, what failed: the verdict's reason and
the failing tests' messages, host paths shortened, control characters escaped, cut to
`feedback_chars`. After `max_attempts` failures the episode ends with reward 0. A
sandbox that cannot grade (verdict "error") is the environment's failure, not the
model's: it raises, and the runner ends the episode as an environment error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

from rlvr.data.records import TaskRecord
from rlvr.environments.options import check_turn_cost, outcome_reward, parse_options
from rlvr.environments.sandbox import check_packages
from rlvr.environments.text import first_messages, sanitise
from rlvr.episodes.base import EpisodeLimits, Message, Reply, ToolSpec
from rlvr.verifiers.base import Verdict, Verifier

NAME = "code_feedback"
DEFAULT_NOTE = ("If the tests fail you will be told what failed; then send the whole "
                "corrected program.")


@dataclass(frozen=True)
class CodeFeedbackOptions:
    """max_attempts: attempts per episode (0: episodes.max_turns); turn_cost: taken from
    a pass for each failed attempt before it; feedback_chars: most characters of test
    output sent back; note: added to the task's prompt ("" for none); sandbox, timeout_s,
    memory_mb, packages: the code verifier's settings (rlvr.verifiers.code)."""

    max_attempts: int = 0
    turn_cost: float = 0.0
    feedback_chars: int = 300
    note: str = DEFAULT_NOTE
    sandbox: Literal["bwrap", "none-unsafe"] = "bwrap"
    timeout_s: float = 6.0
    memory_mb: int = 512
    packages: tuple[str, ...] = ("numpy",)

    def __post_init__(self) -> None:
        check_turn_cost(self.turn_cost)
        if self.max_attempts < 0:
            raise ValueError(f"max_attempts must be >= 0, got {self.max_attempts}")
        if not 40 <= self.feedback_chars <= 4000:
            raise ValueError(f"feedback_chars must be in [40, 4000], got {self.feedback_chars}")
        check_packages(self.packages)


def code_verifier(options: CodeFeedbackOptions) -> Verifier:
    """The code verifier with the operator's settings (its sandbox starts on first use)."""
    from rlvr.verifiers.code.verifier import CodeVerifier

    return CodeVerifier(sandbox=options.sandbox, timeout_s=options.timeout_s,
                        memory_mb=options.memory_mb, packages=list(options.packages),
                        preload_packages="never")


def feedback(verdict: Verdict, limit: int) -> str:
    """What the model reads after a failed attempt."""
    details = verdict.details
    lines = [f"The tests failed ({verdict.reason}"
             + (f": {details['passed_tests']} of {details['total_tests']} passed)."
                if "total_tests" in details else ").")]
    said = [str(e) for e in details.get("errors") or [] if e]
    if details.get("error"):
        said.insert(0, str(details["error"]))
    if details.get("cases"):
        said.append("cases: " + ", ".join(map(str, details["cases"])))
    if verdict.reason == "timeout":
        said.append(f"time limit: {details.get('limit_s')} s")
    if said:
        lines.append(sanitise("\n".join(dict.fromkeys(said)), limit))
    lines.append("Send the whole corrected program.")
    return "\n".join(lines)


class CodeFeedback:
    """One episode (see the module docstring). `make_verifier` builds its own verifier
    (a fresh sandbox per episode), which close() releases."""

    tools: tuple[ToolSpec, ...] = ()

    def __init__(self, limits: EpisodeLimits, options: CodeFeedbackOptions,
                 make_verifier: Callable[[CodeFeedbackOptions], Verifier] = code_verifier):
        self.limits, self.options = limits, options
        self._make_verifier = make_verifier
        self._verifier: Verifier | None = None
        self._reference: Any = None
        self._attempts = 0
        wanted = options.max_attempts or limits.max_turns
        self.max_attempts = min(wanted, limits.max_turns)

    def reset(self, task: TaskRecord) -> list[Message]:
        if self._verifier is None:
            self._verifier = self._make_verifier(self.options)
        self._verifier.check_reference(task.reference)  # InvalidReference: a data bug
        self._reference, self._attempts = task.reference, 0
        return first_messages(task, self.options.note)

    def step(self, turn: str) -> Reply:
        if self._verifier is None or self._reference is None:
            raise RuntimeError(f"{NAME}: step() before reset()")
        self._attempts += 1
        verdict = self._verifier.verify(turn, self._reference)
        if verdict.reason == "error":  # the sandbox failed, not the program
            raise RuntimeError(f"{NAME}: the code sandbox could not grade: "
                               f"{verdict.details.get('error', '')[:300]}")
        info = {"attempt": self._attempts, "verdict_reason": verdict.reason,
                "verdict_score": verdict.score}
        if verdict.passed:
            reward = outcome_reward(True, self._attempts, self.options.turn_cost)
            return Reply([], reward, True, info)
        if self._attempts >= self.max_attempts:
            return Reply([], 0.0, True, info)
        message = {"role": "user", "content": feedback(verdict, self.options.feedback_chars)}
        return Reply([message], None, False, info)

    def close(self) -> None:
        if self._verifier is not None:
            close = getattr(self._verifier, "close", None)
            if close is not None:
                close()
            self._verifier = None


def make(record: TaskRecord, options: dict[str, Any], limits: EpisodeLimits) -> CodeFeedback:
    """The registry's factory: a fresh episode (and sandbox) for `record`."""
    return CodeFeedback(limits, parse_options(CodeFeedbackOptions, options, NAME))
