"""Strict reading of the judge's answer: one JSON object, exactly the rubric's keys,
each a number in [0, scale]. Anything else raises `Unparseable`; the verifier turns that
into an error verdict (score 0, reason "judge_unparseable"), never a guessed score.

Only the response's own message is read: the request (which quotes the completion,
forged verdicts included) never reaches this parser.
"""

from __future__ import annotations

import json
import math
from typing import Any

from rlvr.verifiers.judge.rubric import Rubric


class Unparseable(ValueError):
    """The endpoint's answer is not a verdict in the required shape; says why."""


def response_content(body: Any) -> str:
    """The assistant message text of an OpenAI chat-completions response body."""
    if not isinstance(body, dict):
        raise Unparseable("response body is not a JSON object")
    choices = body.get("choices")
    if not isinstance(choices, list) or len(choices) != 1:
        raise Unparseable("response must hold exactly one choice")
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise Unparseable("response choice has no message content string")
    return content


def _reject_constant(name: str) -> Any:
    raise Unparseable(f"non-finite number {name} in verdict")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise Unparseable(f"repeated key in verdict: {keys}")
    return dict(pairs)


def parse_verdict(content: str, rubric: Rubric, scale: int) -> dict[str, float]:
    """Criterion id -> score for a verdict text, or `Unparseable`.

    Surrounding whitespace is the only slack: a code fence, a sentence before or after,
    a second object, a missing, extra or repeated key, a string, boolean, NaN or
    out-of-range number all fail.
    """
    text = content.strip()
    if not text.startswith("{") or not text.endswith("}"):
        raise Unparseable("answer is not a bare JSON object")
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:  # includes "Extra data" (several objects)
        raise Unparseable(f"invalid JSON: {exc.msg} (char {exc.pos})") from None
    if not isinstance(data, dict):
        raise Unparseable("answer is not a JSON object")
    expected = set(rubric.ids)
    if set(data) != expected:
        missing, extra = sorted(expected - set(data)), sorted(set(data) - expected)
        raise Unparseable(f"verdict keys differ from the rubric's (missing {missing}, "
                          f"extra {extra})")
    scores = {}
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Unparseable(f"score for {key!r} is not a number: {value!r}")
        if not math.isfinite(value) or not 0 <= value <= scale:
            raise Unparseable(f"score for {key!r} is out of range [0, {scale}]: {value!r}")
        scores[key] = float(value)
    return scores


def usage_of(body: Any) -> tuple[int, int]:
    """(prompt_tokens, completion_tokens) from a response's `usage`; zeros if absent or
    malformed (the counters then undercount, which the docs say)."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return 0, 0
    def count(name: str) -> int:
        value = usage.get(name)
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        return value if ok else 0
    return count("prompt_tokens"), count("completion_tokens")
