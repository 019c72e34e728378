"""Turn a record's prompt into the text the engine tokenizes.

The tokenizer's chat template when it has one (chat messages, or text wrapped as one
user message), else the text as written (chat messages without a template are joined
as "role: content" lines). The engine adds no special tokens, so BOS is written here
when the tokenizer defines one and the template did not already write it.
"""

from __future__ import annotations

from typing import Any, Callable

from rlvr.data.records import TaskRecord


def renderer_for(tokenizer: Any) -> Callable[[TaskRecord], str]:
    has_template = bool(getattr(tokenizer, "chat_template", None))
    bos = getattr(tokenizer, "bos_token", None) or ""

    def render(record: TaskRecord) -> str:
        prompt = record.prompt
        messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
        if has_template:
            text = tokenizer.apply_chat_template(messages, tokenize=False,
                                                 add_generation_prompt=True)
        elif isinstance(prompt, list):
            text = "\n".join(f"{m['role']}: {m['content']}" for m in prompt) + "\nassistant:"
        else:
            text = prompt
        return text if not bos or text.startswith(bos) else bos + text

    return render
