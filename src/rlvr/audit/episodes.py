"""The audit's checks on episodes: rollouts.jsonl lines with an `episode` block (the
trainer's, rlvr.training.episode_metrics; docs/contracts.md, "Episodes").

    paid_env_fault       the episode ended on an environment fault (end_reason
                         env_error, env_timeout, bad_observation) and was paid: its
                         verdict passed or its reward is > 0. The runner gives such an
                         episode reward 0, so one is a bug (raised at its first attempt).
    answer_outside_turn  a paid episode with environment turns whose model's own last
                         message states no answer: the answer, if any, was in a tool
                         result or an environment message, which nobody may grade.

An answer, in the model's last message with its tool-call blocks taken out: for a
scalar reference (a number, a string) a stated final answer (rlvr.audit.answers:
a box, "the answer is X", a closing value, a bare number) or the reference's own
text; for a structured one (a code task's tests, IFEval's instructions) any letter or
digit of its own (a program, a response).
"""

from __future__ import annotations

import math
import re
from typing import Any

from rlvr.audit.answers import final_answer
from rlvr.audit.literals import compact

PAID_ENV_FAULT, ANSWER_OUTSIDE_TURN = "paid_env_fault", "answer_outside_turn"
FAULT_KINDS = ("env_error", "env_timeout", "bad_observation")
# codes that are never honest: raised at their first attempt, not at the window's share
EXACT_CODES = frozenset({PAID_ENV_FAULT})
# The tool-call protocol's tags (rlvr.environments.tools): a call is not an answer. The
# audit reads run files only, so it keeps its own copy of the two tag names.
_TOOL_CALL = re.compile(r"<tool_call>.*?(?:</tool_call>|\Z)", re.DOTALL)
_OWN_TEXT = re.compile(r"[^\W_]")


def episode_block(attempt: dict[str, Any]) -> dict[str, Any] | None:
    block = attempt.get("episode")
    return block if isinstance(block, dict) else None


def end_kind(block: dict[str, Any]) -> str:
    """"env_error: ValueError: ..." -> "env_error"."""
    return str(block.get("end_reason") or "").split(":", 1)[0]


def ended_on_fault(attempt: dict[str, Any]) -> bool:
    block = episode_block(attempt)
    return block is not None and end_kind(block) in FAULT_KINDS


def counts_as_passed(attempt: dict[str, Any]) -> bool:
    """The attempt was paid: its verdict passed, or it is an episode that ended on an
    environment fault with a reward > 0 (paid whatever its verdict says)."""
    verdict = attempt.get("verdict") if isinstance(attempt.get("verdict"), dict) else {}
    if verdict.get("passed") is True:
        return True
    reward = attempt.get("reward")
    return (ended_on_fault(attempt) and isinstance(reward, (int, float))
            and not isinstance(reward, bool) and math.isfinite(reward) and reward > 0)


def episode_codes(attempt: dict[str, Any]) -> list[str]:
    """The episode codes of one paid attempt (none for a line without an episode)."""
    block = episode_block(attempt)
    if block is None:
        return []
    codes = []
    if end_kind(block) in FAULT_KINDS:
        codes.append(PAID_ENV_FAULT)
    if _has_environment_turns(block) and not states_answer(
            str(attempt.get("completion") or ""), attempt.get("reference")):
        codes.append(ANSWER_OUTSIDE_TURN)
    return codes


def states_answer(text: str, reference: Any) -> bool:
    """Whether the model's message `text` states an answer (see the module docstring)."""
    own = _TOOL_CALL.sub("", text)
    if isinstance(reference, bool) or not isinstance(reference, (str, int, float)):
        return bool(_OWN_TEXT.search(own))
    return final_answer(own) is not None or holds_value(own, str(reference))


def holds_value(text: str, value: str) -> bool:
    """`value` in `text`, spaces aside, not as part of a longer number ("12" is not in
    "123"; "7" is in "Is it 7?")."""
    key, haystack = compact(value), compact(text)
    if not key:
        return False
    start = haystack.find(key)
    while start >= 0:
        before = haystack[start - 1] if start else ""
        after = haystack[start + len(key):start + len(key) + 1]
        if not (_glued(before, key[0]) or _glued(after, key[-1])):
            return True
        start = haystack.find(key, start + 1)
    return False


def _glued(neighbour: str, edge: str) -> bool:
    return edge.isdigit() and (neighbour.isdigit() or neighbour == ".")


def _has_environment_turns(block: dict[str, Any]) -> bool:
    """Environment messages after the model's first turn (tool results, feedback)."""
    messages = block.get("messages")
    if not isinstance(messages, list):
        return False
    roles = [m.get("role") for m in messages if isinstance(m, dict)]
    if "assistant" not in roles:
        return False
    return any(role != "assistant" for role in roles[roles.index("assistant"):])
