"""Turn rendering: an episode's conversation as the token ids the model reads.

The first prompt is the environment's first messages (`env.reset`) through the run's
prompt renderer (rlvr.data.prompts: the chat template with the configured system prompt
and instruction, or the plain template), tokenized once without added special tokens,
exactly as a single-turn prompt is. The tools, when the environment has any, go to the
chat template (`apply_chat_template(tools=[spec.to_json_schema()])`) when the template
has a tool format; otherwise (and in the plain style) their JSON schemas are written at
the head of the first user message, one a line, under "Tools you can call".

After each model turn only the environment's new text (the "delta") is tokenized; the
model's sampled tokens are never re-tokenized (a text that decodes from them may
tokenize to other ids: tests/test_episodes_render.py shows one).

Chat style: the conversation so far with a placeholder as the model's turn, then the
observation messages, rendered with `add_generation_prompt=True`. The delta is the text
after the placeholder: the template's closing of the assistant turn (less the model's
own end-of-sequence token when the turn ended with it: "<|im_end|>" is already in the
context, "\\n" is not), the observation messages and the next assistant header.

Plain style, the plain-text protocol (no chat template): after the model's turn each
observation message is written as a blank line and "Role: content" ("User", "Tool",
"System"), then a blank line and "Assistant:", where the model's next turn begins:

    {first prompt}{model turn 1}<eos>\\n\\nUser: {observation}\\n\\nAssistant:{model turn 2}...

docs/contracts.md, "Episodes", is the reader's version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from rlvr.data.prompts import PromptError, PromptRenderer
from rlvr.episodes.base import Message, ToolSpec

OBSERVATION_ROLES = ("user", "tool", "system")
TOOLS_HEADER = "Tools you can call (JSON schemas, one a line):"
_PLACEHOLDER = "RLVR-TURN-PLACEHOLDER-5d1c"  # stands for the model's turn while rendering


class RenderError(PromptError):
    """Messages the template cannot render into a turn (names what is wrong)."""


@dataclass
class Conversation:
    """One episode's rendering state. messages: what the chat template is given (the
    run's system prompt and instruction already in); tools: the schemas the template
    takes (None when they were written into the first message instead)."""

    messages: list[Message]
    tools: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class FirstPrompt:
    text: str
    ids: list[int]
    conversation: Conversation


def message_problem(messages: Any, roles: Sequence[str] = OBSERVATION_ROLES) -> str:
    """Why `messages` is not a list of {"role": one of `roles`, "content": str}, or ""."""
    if not isinstance(messages, list):
        return f"messages must be a list, got {type(messages).__name__}"
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            return f"message {i} is a {type(m).__name__}, not a dict"
        if m.get("role") not in roles:
            return f"message {i} has role {m.get('role')!r} (allowed: {', '.join(roles)})"
        if not isinstance(m.get("content"), str):
            return f"message {i} has no text content"
    return ""


def tools_text(tools: Sequence[ToolSpec]) -> str:
    lines = [json.dumps(t.to_json_schema(), sort_keys=True) for t in tools]
    return "\n".join([TOOLS_HEADER, *lines])


class TurnRenderer:
    """Renders episodes for one tokenizer and prompt configuration (`prompts`)."""

    def __init__(self, prompts: PromptRenderer) -> None:
        self.prompts = prompts
        self.tokenizer = prompts.tokenizer
        template = getattr(self.tokenizer, "chat_template", None) or ""
        text = template if isinstance(template, str) else " ".join(map(str, template))
        self.native_tools = prompts.style == "chat" and "tools" in text
        self._special = set(getattr(self.tokenizer, "all_special_ids", []) or [])

    def first_prompt(self, messages: list[Message], tools: Sequence[ToolSpec] = (),
                     record_id: str = "") -> FirstPrompt:
        """The episode's first prompt (text and ids) and its rendering state."""
        schemas = [t.to_json_schema() for t in tools] if tools and self.native_tools else None
        if tools and schemas is None:
            messages = _with_tools_text(messages, tools_text(tools), record_id)
        text = self.prompts.render_messages(messages, record_id, tools=schemas)
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        chat = self.prompts.chat_messages(messages, record_id) if self.chat else list(messages)
        return FirstPrompt(text, ids, Conversation(chat, schemas))

    @property
    def chat(self) -> bool:
        return self.prompts.style == "chat"

    def observation_ids(self, conversation: Conversation, turn_text: str,
                        last_token: int | None, observation: list[Message]) -> list[int]:
        """The ids the environment writes after the model's turn (its sampled tokens end
        with `last_token`, None for an empty turn); the conversation grows by the turn
        and the observation."""
        delta = self.observation_text(conversation, last_token, observation)
        conversation.messages += [{"role": "assistant", "content": turn_text}, *observation]
        return self.tokenizer(delta, add_special_tokens=False)["input_ids"]

    def observation_text(self, conversation: Conversation, last_token: int | None,
                         observation: list[Message]) -> str:
        """The text of observation_ids (the conversation left as it is)."""
        if self.chat:
            return self._chat_delta(conversation, last_token, observation)
        return "".join(f"\n\n{m['role'].capitalize()}: {m['content']}"
                       for m in observation) + "\n\nAssistant:"

    def _chat_delta(self, conversation: Conversation, last_token: int | None,
                    observation: list[Message]) -> str:
        messages = [*conversation.messages, {"role": "assistant", "content": _PLACEHOLDER},
                    *observation]
        extra = {"tools": conversation.tools} if conversation.tools else {}
        try:
            text = self.tokenizer.apply_chat_template(messages, tokenize=False,
                                                      add_generation_prompt=True, **extra)
        except Exception as exc:  # a template may raise on roles it does not take
            raise RenderError(f"the chat template cannot render the observation: "
                              f"{type(exc).__name__}: {exc}") from None
        if text.count(_PLACEHOLDER) != 1:
            raise RenderError("the chat template does not render an assistant turn's "
                              "content as it is")
        delta = text[text.index(_PLACEHOLDER) + len(_PLACEHOLDER):]
        if last_token is not None and last_token in self._special:
            written = self.tokenizer.decode([last_token], skip_special_tokens=False)
            delta = delta.removeprefix(written)  # the model's own EOS closed its turn
        return delta

    def decode(self, ids: list[int]) -> str:
        """A turn's text as engines report it (special tokens dropped)."""
        return self.tokenizer.decode(ids, skip_special_tokens=True)


def _with_tools_text(messages: list[Message], text: str, record_id: str) -> list[Message]:
    """The tool block at the head of the first user message."""
    first = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
    if first is None:
        raise RenderError(f"record {record_id}: the environment has tools but its first "
                          f"messages have no user message to list them in")
    out = list(messages)
    out[first] = {**out[first], "content": f"{text}\n\n{out[first]['content']}"}
    return out
