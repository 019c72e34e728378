"""`python_tool`: math with a Python tool.

The task record is a math task (its reference a math verifier reference). The model may
call the `python` tool (the protocol: rlvr.environments.tools) to run a snippet in the
code sandbox (rlvr.environments.sandbox) and read what it prints, as a tool message
(stdout cut to `output_chars`, host paths shortened, control characters escaped). A turn
without a tool call is the model's final answer, and so is its last allowed turn: that
text, with any tool-call blocks removed, is graded by the `math` verifier, and nothing
else is. A tool's output is never read as the answer: a snippet that prints
`\\boxed{42}` earns nothing unless the model then states the answer itself.

Reward: the math verdict (1 right, 0 not), less `turn_cost` per turn before the answer
(floored at 0). Tool calls that cannot run (bad JSON, an unknown tool, arguments outside
the schema, the per-episode budget spent) come back to the model as error results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

from rlvr.data.records import TaskRecord, prompt_text
from rlvr.environments.options import check_turn_cost, outcome_reward, parse_options
from rlvr.environments.sandbox import (SandboxSnippetRunner, SnippetResult, SnippetRunner,
                                       check_packages)
from rlvr.environments.schema import check_schema
from rlvr.environments.text import first_messages, sanitise
from rlvr.environments.tools import (ToolCall, describe_tools, has_tool_call,
                                     parse_tool_calls, strip_tool_calls, tool_message)
from rlvr.episodes.base import EpisodeLimits, Message, Reply, ToolSpec
from rlvr.verifiers.base import Verdict, run_verifier

NAME = "python_tool"
PYTHON = ToolSpec(
    name="python",
    description="Runs a Python snippet (standard library only, a few seconds) and returns "
                "what it prints. Use print() to see values.",
    parameters={"type": "object", "required": ["code"], "additionalProperties": False,
                "properties": {"code": {"type": "string",
                                        "description": "the Python source to run"}}})
DEFAULT_NOTE = ("When you know the answer, reply without a tool call and give the final "
                "answer as \\boxed{ANSWER}.")


@dataclass(frozen=True)
class PythonToolOptions:
    """max_tool_calls: snippets run per episode; output_chars: most characters of a
    result sent back; tool_role: "tool", "user" (with a prefix) or "auto" (by the chat
    template: rlvr.environments.tools.supports_tool_role); describe_tools: explain the
    call protocol in the prompt; note: added to the prompt; turn_cost: taken from a right
    answer per turn before it; sandbox, timeout_s, memory_mb, packages: each run's."""

    max_tool_calls: int = 4
    output_chars: int = 400
    tool_role: Literal["auto", "tool", "user"] = "auto"
    describe_tools: bool = True
    note: str = DEFAULT_NOTE
    turn_cost: float = 0.0
    sandbox: Literal["bwrap", "none-unsafe"] = "bwrap"
    timeout_s: float = 5.0
    memory_mb: int = 512
    packages: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_turn_cost(self.turn_cost)
        if not 0 <= self.max_tool_calls <= 64:
            raise ValueError(f"max_tool_calls must be in [0, 64], got {self.max_tool_calls}")
        if not 40 <= self.output_chars <= 4000:
            raise ValueError(f"output_chars must be in [40, 4000], got {self.output_chars}")
        if not 0 < self.timeout_s <= 30:
            raise ValueError(f"timeout_s must be in (0, 30], got {self.timeout_s}")
        check_packages(self.packages)


def sandbox_runner(options: PythonToolOptions) -> SnippetRunner:
    return SandboxSnippetRunner(options.sandbox, options.timeout_s, options.memory_mb,
                                options.packages, output_cap=4 * options.output_chars)


def math_verifier() -> Any:
    from rlvr.verifiers.math import MathVerifier  # sympy: imported when an episode starts

    return MathVerifier()


def result_text(result: SnippetResult, limit: int, timeout_s: float) -> str:
    """A run's result as the model reads it."""
    text = sanitise(result.output, limit) if result.output else "(no output: print() what you want to see)"
    if result.timed_out:
        text += f"\n[stopped: the time limit of {timeout_s:g} s]"
    elif result.truncated:
        text += "\n[stopped: too much output]"
    elif result.exit_code not in (0, None):
        text += f"\n[exit code {result.exit_code}]"
    return text


class PythonTool:
    """One episode (see the module docstring). `make_runner` builds its own snippet
    runner (a fresh sandbox, started on the first call), which close() releases."""

    tools: tuple[ToolSpec, ...] = (PYTHON,)

    def __init__(self, limits: EpisodeLimits, options: PythonToolOptions,
                 make_runner: Callable[[PythonToolOptions], SnippetRunner] = sandbox_runner,
                 make_verifier: Callable[[], Any] = math_verifier):
        check_schema(PYTHON.parameters)
        self.limits, self.options = limits, options
        self.role = "tool" if options.tool_role == "tool" else "user"  # "auto" unresolved: user
        self._make_runner, self._runner = make_runner, None
        self._verifier = make_verifier()
        self._record: TaskRecord | None = None
        self._turns = self._calls = 0

    def reset(self, task: TaskRecord) -> list[Message]:
        self._verifier.check_reference(task.reference)  # InvalidReference: a data bug
        self._record, self._turns, self._calls = task, 0, 0
        note = "\n\n".join(t for t in (describe_tools(self.tools) if self.options.describe_tools
                                       else "", self.options.note) if t)
        return first_messages(task, note)

    def step(self, turn: str) -> Reply:
        if self._record is None:
            raise RuntimeError(f"{NAME}: step() before reset()")
        self._turns += 1
        if not has_tool_call(turn) or self._turns >= self.limits.max_turns:
            return self._final(turn)
        calls = parse_tool_calls(turn, self.tools)
        messages = [self._answer(call) for call in calls]
        errors = sum(call.error is not None for call in calls)
        return Reply(messages, None, False, {"turn": self._turns, "tool_calls": len(calls),
                                             "tool_errors": errors})

    def _answer(self, call: ToolCall) -> Message:
        name = call.name if call.name == PYTHON.name else "tool"
        if call.error:
            return tool_message(name, f"error: {sanitise(call.error, 300)}", self.role)
        if self._calls >= self.options.max_tool_calls:
            return tool_message(name, "error: no tool calls left; give your final answer",
                                self.role)
        self._calls += 1
        if self._runner is None:
            self._runner = self._make_runner(self.options)
        result = self._runner.run(call.arguments["code"])
        text = result_text(result, self.options.output_chars, self.options.timeout_s)
        return tool_message(name, text, self.role)

    def _final(self, turn: str) -> Reply:
        answer = strip_tool_calls(turn)  # the model's own words only
        record = self._record
        verdict: Verdict = run_verifier(self._verifier, answer, record.reference,
                                        prompt_text(record))
        reward = outcome_reward(verdict.passed, self._turns, self.options.turn_cost)
        return Reply([], reward, True, {"turn": self._turns, "verdict_reason": verdict.reason,
                                        "tool_calls_run": self._calls})

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None


def make(record: TaskRecord, options: dict[str, Any], limits: EpisodeLimits) -> PythonTool:
    """The registry's factory: a fresh episode (and sandbox) for `record`."""
    return PythonTool(limits, parse_options(PythonToolOptions, options, NAME))
