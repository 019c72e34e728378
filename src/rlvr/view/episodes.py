"""An attempt's episode as the page shows it: how it went (turns, end reason, tool calls
and errors, who gave the reward, model and environment tokens) and, when the
environment wrote between the model's turns, the transcript in order.

Each message of the transcript gets a `part`:

    prompt        the first messages (the environment's reset): the prompt, context
    model         a model turn: the tokens the update trains on (loss mask 1)
    tool_result   a tool's output (role "tool", or a user message the tool protocol
                  marks "[NAME tool result]"): context (loss mask 0)
    environment   feedback or the next user turn: context (loss mask 0)

and a model turn's text is cut into `segments`, its tool calls apart from its prose
(the protocol's <tool_call> blocks, rlvr.environments.tools). A plain single-turn
attempt (one turn, done, no tools, no transcript) has no episode view: the page shows
it as it shows any attempt. The file's text is model and environment output: it goes
to the page as JSON strings, and the page sets it as text, never as HTML.
"""

from __future__ import annotations

import math
import re
from typing import Any

MAX_MESSAGE = 8_000      # characters of one message sent to the page (rest cut, said)
MAX_MESSAGES = 64        # messages of one transcript sent to the page (rest counted)
_TOOL_CALL = re.compile(r"<tool_call>.*?(?:</tool_call>|\Z)", re.DOTALL)
_TOOL_RESULT = re.compile(r"\[[\w.-]{1,64} tool result\]")
FIELDS = ("turns", "end_reason", "model_tokens", "env_tokens", "reward_source",
          "tool_calls", "tool_errors")


def episode_view(record: dict[str, Any]) -> dict[str, Any] | None:
    block = record.get("episode")
    if not isinstance(block, dict):
        return None
    messages = block.get("messages") if isinstance(block.get("messages"), list) else None
    summary = {key: _scalar(block.get(key)) for key in FIELDS}
    plain = (summary["turns"] == 1 and summary["end_reason"] == "done"
             and not summary["tool_calls"] and not summary["tool_errors"] and not messages)
    if plain:
        return None
    rewards = block.get("turn_rewards")
    summary["turn_rewards"] = [_scalar(r) for r in rewards] if isinstance(rewards, list) else []
    if messages is not None:
        summary["messages"] = transcript(messages[:MAX_MESSAGES])
        summary["more_messages"] = max(0, len(messages) - MAX_MESSAGES)
    return summary


def transcript(messages: list[Any]) -> list[dict[str, Any]]:
    """Each message with its part (see the module docstring), its text cut to
    MAX_MESSAGE characters, and a model turn's segments."""
    shown, seen_model = [], False
    for message in messages:
        message = message if isinstance(message, dict) else {"role": "?", "content": message}
        role = str(message.get("role", "?"))
        content = message.get("content")
        text = content if isinstance(content, str) else repr(content)
        seen_model = seen_model or role == "assistant"
        part = message_part(role, text, seen_model)
        entry = {"role": role, "part": part, "text": text[:MAX_MESSAGE],
                 "cut": max(0, len(text) - MAX_MESSAGE)}
        if isinstance(message.get("name"), str):
            entry["name"] = message["name"][:100]
        if part == "model":
            entry["segments"] = segments(entry["text"])
        shown.append(entry)
    return shown


def message_part(role: str, text: str, after_model: bool) -> str:
    if role == "assistant":
        return "model"
    if not after_model:
        return "prompt"
    if role == "tool" or (role == "user" and _TOOL_RESULT.match(text)):
        return "tool_result"
    return "environment"


def segments(text: str) -> list[dict[str, str]]:
    """[{"kind": "text" | "tool_call", "text"}] in order; an unclosed call runs to the end."""
    found, position = [], 0
    for match in _TOOL_CALL.finditer(text):
        if match.start() > position:
            found.append({"kind": "text", "text": text[position:match.start()]})
        found.append({"kind": "tool_call", "text": match.group(0)})
        position = match.end()
    if position < len(text) or not found:
        found.append({"kind": "text", "text": text[position:]})
    return found


def _scalar(value: Any) -> Any:
    """A JSON scalar as is; anything else (a nested value in a hand-edited file) as text."""
    return value if value is None or isinstance(value, (str, int, float, bool)) else repr(value)


# --- the episode/* metrics as curves ---------------------------------------------------

# (metrics key or key prefix, chart id, chart title, trace name); a prefix's keys (one
# per turn k, one per end kind) share one chart, a trace each, named by the key's tail
# ("turn k" for success by turn); a chart of one key has no trace name (the run's)
EPISODE_CURVES = [
    ("episode/turns_mean", "episode/turns_mean", "turns per episode", None),
    ("episode/tool_calls_mean", "episode/tools", "tool calls and errors per episode",
     "tool calls"),
    ("episode/tool_errors_mean", "episode/tools", "tool calls and errors per episode",
     "tool errors"),
    ("episode/success_by_turn_", "episode/success_by_turn",
     "share of episodes won at turn k", "turn "),
    ("episode/end_", "episode/end", "how episodes ended (share)", ""),
    ("episode/env_seconds", "episode/env_seconds", "environment seconds per step", None),
]
_TURN_KEY = re.compile(r"episode/success_by_turn_(\d+)")


def episode_curves(metrics: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{key: {"label", "chart", "x", "y"}, and "trace" in a shared chart} for the run's
    episode/* metrics, in EPISODE_CURVES' order, when its episodes are more than
    single turns (every run logs them; a single-turn run's are constants: turns 1, no
    tools, every episode done). An end kind that never
    happened is left out."""
    rows = [m for m in metrics if isinstance(m.get("step"), int)]
    keys = sorted({k for m in rows for k in m if k.startswith("episode/")}, key=_order)
    if not _episodes_are_multi_turn(rows, keys):
        return {}
    series = {}
    for key in keys:
        spec = next((s for s in EPISODE_CURVES if key.startswith(s[0])), None)
        points = [(m["step"], m[key]) for m in rows if _finite(m.get(key))]
        if spec is None or not points or (spec[1] == "episode/end" and
                                          not any(y for _, y in points)):
            continue
        prefix, chart, title, trace = spec
        if prefix.endswith("_"):
            trace += key[len(prefix):]
        series[key] = {"label": title, "chart": chart, "x": [p[0] for p in points],
                       "y": [p[1] for p in points]}
        if trace is not None:
            series[key]["trace"] = trace
    return series


def _order(key: str) -> tuple[int, str, int]:
    """EPISODE_CURVES' order (unknown keys last), turn 10 after turn 9."""
    place = next((i for i, s in enumerate(EPISODE_CURVES) if key.startswith(s[0])),
                 len(EPISODE_CURVES))
    match = _TURN_KEY.fullmatch(key)
    return (place, key[:match.start(1)], int(match.group(1))) if match else (place, key, 0)


def _episodes_are_multi_turn(rows: list[dict[str, Any]], keys: list[str]) -> bool:
    """More than one turn allowed (a success_by_turn_k with k >= 2), a tool called, or
    an episode that did not simply end done."""
    if any((m := _TURN_KEY.fullmatch(k)) and int(m.group(1)) >= 2 for k in keys):
        return True
    return any((_finite(m.get("episode/tool_calls_mean")) and m["episode/tool_calls_mean"] > 0)
               or (_finite(m.get("episode/end_done")) and m["episode/end_done"] != 1.0)
               for m in rows)


def _finite(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))
