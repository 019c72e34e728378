"""Turn a task record's prompt into the exact text the model continues.

Two styles: "chat" renders through the tokenizer's own chat template (with an optional
system message, and the answer-format instruction appended to the user turn);
"plain" fills a text template. The rendered text is complete — BOS included where the
model wants one — so engines tokenize it without adding special tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlvr.data.records import ChatMessages, TaskRecord
from rlvr.errors import UserError


class PromptError(UserError, ValueError):
    """A prompt cannot be rendered with this configuration (names the record)."""


def resolve_style(style: str, tokenizer: Any) -> str:
    """A config's prompt style with "auto" resolved: "chat" when the tokenizer has a chat
    template, else "plain" (the real-model default, rlvr.training.profile)."""
    if style != "auto":
        return style
    return "chat" if getattr(tokenizer, "chat_template", None) else "plain"


@dataclass(frozen=True)
class PromptRenderer:
    """style: "plain" | "chat"; template: plain-style text with {bos}, {prompt},
    {instruction}; system_prompt / instruction: see PromptConfig."""

    tokenizer: Any
    style: str = "plain"
    template: str = "{bos}{prompt}"
    system_prompt: str = ""
    instruction: str = ""

    def __post_init__(self) -> None:
        if self.style not in ("plain", "chat"):
            raise PromptError(f"prompt style must be 'plain' or 'chat', got {self.style!r}")
        if self.style == "chat" and not getattr(self.tokenizer, "chat_template", None):
            raise PromptError("prompt style 'chat' needs a tokenizer with a chat template; "
                              "this tokenizer has none (use style 'plain')")
        if self.style == "plain":
            try:
                self.template.format(bos="", prompt="", instruction="")
            except (KeyError, IndexError, ValueError) as exc:
                raise PromptError(f"prompt template {self.template!r}: only {{bos}}, "
                                  f"{{prompt}} and {{instruction}} may appear ({exc})") from None

    def render(self, record: TaskRecord) -> str:
        return self.render_messages(record.prompt, record.id)

    def render_messages(self, prompt: str | ChatMessages, record_id: str,
                        tools: list[dict[str, Any]] | None = None) -> str:
        """A prompt (text or chat messages) as the model reads it; `tools` (JSON
        schemas) go to the chat template (rlvr.episodes.render decides when)."""
        if self.style == "chat":
            messages = self.chat_messages(prompt, record_id)
            extra = {"tools": tools} if tools else {}
            return self.tokenizer.apply_chat_template(messages, tokenize=False,
                                                      add_generation_prompt=True, **extra)
        if not isinstance(prompt, str):
            prompt = _join_messages(prompt, record_id)
        bos = getattr(self.tokenizer, "bos_token", None) or ""
        return self.template.format(bos=bos, prompt=prompt, instruction=self.instruction)

    def chat_messages(self, prompt: str | ChatMessages, record_id: str) -> ChatMessages:
        """The messages the chat template gets: the instruction appended to the last
        user turn, the system prompt first (unless the messages have their own)."""
        messages: ChatMessages = ([{"role": "user", "content": prompt}]
                                  if isinstance(prompt, str) else list(prompt))
        if self.instruction:
            last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"),
                            default=None)
            if last_user is None:
                raise PromptError(f"record {record_id}: no user message to add the "
                                  f"instruction to")
            message = messages[last_user]
            messages[last_user] = {**message, "content": f"{message['content']}\n\n"
                                   f"{self.instruction}"}
        if self.system_prompt and not any(m.get("role") == "system" for m in messages):
            messages = [{"role": "system", "content": self.system_prompt}] + messages
        return messages


def _join_messages(messages: ChatMessages, record_id: str) -> str:
    try:
        return "\n".join(m["content"] for m in messages)
    except (KeyError, TypeError):
        raise PromptError(f"record {record_id}: prompt messages need a 'content' field") from None
