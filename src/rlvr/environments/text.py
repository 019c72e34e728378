"""Text that goes back to the model: the first messages of a task, and program output
made short and safe (no host paths, no control characters) before it becomes a turn."""

from __future__ import annotations

import re
from typing import Any

from rlvr.data.records import TaskRecord
from rlvr.episodes.base import Message
from rlvr.textsafe import scrub_text

# An absolute POSIX path of two or more parts (/usr/lib/python3.11/json/decoder.py,
# /home/me/x): where the host keeps things is none of the model's business. The last
# part stays, so a traceback still says which file (`<path>/decoder.py`).
_HOST_PATH = re.compile(r"(?<![\w.~<>-])(?:/[\w.+@-]+){2,}/?")


def scrub_paths(text: str) -> str:
    """Every absolute path in `text` as `<path>/<its last part>`."""
    def short(match: re.Match) -> str:
        last = match.group(0).rstrip("/").rsplit("/", 1)[-1]
        return f"<path>/{last}"
    return _HOST_PATH.sub(short, text)


def bounded(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters (its head and tail, with how much was
    cut in between: a traceback's last line is the one that says what went wrong)."""
    if len(text) <= limit:
        return text
    marker = f"\n[... {len(text) - limit} characters cut ...]\n"
    keep = max(0, limit - len(marker))
    head = keep // 2
    return text[:head] + marker + text[len(text) - (keep - head):]


def sanitise(text: str, limit: int) -> str:
    """Program or test output as a model may read it: host paths shortened, control
    characters written as `\\uXXXX` (rlvr.textsafe), at most `limit` characters."""
    return bounded(scrub_text(scrub_paths(text)), limit)


def first_messages(record: TaskRecord, note: str = "") -> list[Message]:
    """The task's prompt as chat messages (a copy: the record stays untouched), with
    `note` appended to the last user message when given."""
    prompt: Any = record.prompt
    messages = ([{"role": "user", "content": prompt}] if isinstance(prompt, str)
                else [dict(m) for m in prompt])
    if note:
        users = [i for i, m in enumerate(messages) if m.get("role", "user") == "user"]
        if not users:
            messages.append({"role": "user", "content": note})
        else:
            last = messages[users[-1]]
            last["content"] = f"{last['content']}\n\n{note}"
    return messages
