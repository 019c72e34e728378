"""Tool calls in a model's turn, and tool results as messages.

The protocol (plain text, so it works with any tokenizer). A tool call is a JSON object
between tags, anywhere in the turn:

    <tool_call>{"name": "python", "arguments": {"code": "print(2 ** 10)"}}</tool_call>

Several calls in one turn run in order. Also read, because chat templates trained on
tool use emit them: the object on lines of its own between the tags (Qwen2.5, Hermes),
a JSON list of such objects inside one pair of tags (SmolLM2's function-calling
format), `"parameters"` for `"arguments"`, and arguments written as a JSON string
(the OpenAI API's form). A call that cannot run (not JSON, no closing tag, an unknown
tool, arguments outside the tool's schema) is a `ToolCall` with `error` set: the
environment sends the error back to the model as the tool's result and the episode
goes on; nothing the model writes here raises.

Tool results go back as role "tool" when the chat template knows that role
(`supports_tool_role`), else as role "user" with the prefix `[<name> tool result]`, so
a template without a tool role (SmolLM2's) still shows the model what is what.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

from rlvr.environments.schema import validate
from rlvr.episodes.base import Message, ToolSpec

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_BLOCK = re.compile(re.escape(OPEN) + r"(.*?)(" + re.escape(CLOSE) + r"|\Z)", re.DOTALL)
_TOOL_ROLE = re.compile(r"""['"]tool['"]""")
ToolRole = Literal["tool", "user"]
_ECHO_CHARS = 60  # how much of a bad call's own text an error message quotes


@dataclass(frozen=True)
class ToolCall:
    """One call found in a turn: the tool's name and its arguments, or why it cannot
    run (`error`, a message for the model)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def has_tool_call(text: str) -> bool:
    return OPEN in text


def parse_tool_calls(text: str, tools: Sequence[ToolSpec]) -> list[ToolCall]:
    """Every tool call in `text`, in order, each checked against `tools` (name known,
    arguments valid for its schema)."""
    specs = {tool.name: tool for tool in tools}
    calls: list[ToolCall] = []
    for match in _BLOCK.finditer(text):
        body, closed = match.group(1).strip(), bool(match.group(2))
        if not closed:
            calls.append(ToolCall("", error=f"the tool call has no closing {CLOSE} tag"))
            continue
        calls.extend(_check(call, specs) for call in _decode(body))
    return calls


def _decode(body: str) -> list[ToolCall]:
    """The calls one tag pair holds (an object, or a list of objects), unchecked."""
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        return [ToolCall("", error=f"the tool call is not valid JSON ({exc.msg} at "
                                   f"character {exc.pos}); write "
                                   '{"name": ..., "arguments": {...}}')]
    items = value if isinstance(value, list) else [value]
    if not items:
        return [ToolCall("", error="the tool call holds an empty list")]
    return [_one(item) for item in items]


def _one(item: Any) -> ToolCall:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        return ToolCall("", error='a tool call must be an object with a "name" string')
    arguments = item.get("arguments", item.get("parameters", {}))
    if isinstance(arguments, str):  # the OpenAI API writes arguments as a JSON string
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return ToolCall(item["name"], error="the arguments string is not valid JSON")
    if not isinstance(arguments, dict):
        return ToolCall(item["name"], error="arguments must be a JSON object")
    return ToolCall(item["name"], arguments)


def _check(call: ToolCall, specs: dict[str, ToolSpec]) -> ToolCall:
    if call.error:
        return call
    spec = specs.get(call.name)
    if spec is None:
        known = ", ".join(sorted(specs)) or "none"
        return ToolCall(call.name, call.arguments, f"there is no tool named "
                        f"{call.name[:_ECHO_CHARS]!r} (tools: {known})")
    problem = validate(spec.parameters, call.arguments)
    if problem:
        return ToolCall(call.name, call.arguments, f"bad arguments for {call.name}: {problem}")
    return call


def strip_tool_calls(text: str) -> str:
    """`text` without its tool-call blocks (an unclosed one runs to the end)."""
    return _BLOCK.sub("", text)


def supports_tool_role(chat_template: str | None) -> bool:
    """Whether a chat template renders role "tool" on purpose: it names the role as a
    string ('tool' or "tool"). SmolLM2's template prints any role verbatim but was never
    trained on one, and names none."""
    return bool(chat_template) and bool(_TOOL_ROLE.search(chat_template))


def tool_message(name: str, content: str, role: ToolRole) -> Message:
    """A tool's result as a message of `role` (see the module docstring)."""
    if role == "tool":
        return {"role": "tool", "name": name, "content": content}
    return {"role": "user", "content": f"[{name} tool result]\n{content}"}


def describe_tools(tools: Sequence[ToolSpec]) -> str:
    """The protocol in words for the prompt, so a model whose template drops `tools`
    (SmolLM2's) still learns how to call them."""
    lines = ["You can call these tools:"]
    for tool in tools:
        lines.append(f"- {tool.name}: {tool.description} Arguments (JSON schema): "
                     f"{json.dumps(tool.parameters, sort_keys=True)}")
    example = tools[0].name if tools else "NAME"
    lines.append(f'To call one, write {OPEN}{{"name": "{example}", "arguments": {{...}}}}'
                 f"{CLOSE} and stop; its result comes back in the next message.")
    return "\n".join(lines)
