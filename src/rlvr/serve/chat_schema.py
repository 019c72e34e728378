"""Structured output for `rlvr judge-serve`: OpenAI's `response_format` of type
`json_schema`, for the one shape a rubric verdict has: a flat object whose properties
are all required integers in [minimum, maximum] (no other properties).

The answer is built key by key: for each property the server scores every allowed
integer (its digits and the `,` or `}` after them) under the model and writes the most
likely one. That is greedy decoding restricted to valid verdicts (what vLLM's guided
decoding does for any schema), so a small model's judgement is readable where its free
text would not parse. The judge still parses the answer strictly.
"""

from __future__ import annotations

import json
from typing import Any


class SchemaError(ValueError):
    """The response_format is not one this server can follow."""


def integer_fields(response_format: Any) -> list[tuple[str, int, int]] | None:
    """[(key, minimum, maximum)] for a supported schema, None for plain text;
    SchemaError for anything else."""
    if response_format is None or response_format == {"type": "text"}:
        return None
    shape = "only json_schema with a flat object of required, bounded integer properties"
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        raise SchemaError(f"response_format: {shape} is supported")
    schema = (response_format.get("json_schema") or {}).get("schema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise SchemaError(f"response_format: {shape} is supported")
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not properties \
            or sorted(schema.get("required") or []) != sorted(properties) \
            or schema.get("additionalProperties") is not False:
        raise SchemaError(f"response_format: {shape} (all required, additionalProperties "
                          "false) is supported")
    fields = []
    for key, spec in properties.items():
        low, high = (spec or {}).get("minimum"), (spec or {}).get("maximum")
        if spec.get("type") != "integer" or not isinstance(low, int) \
                or not isinstance(high, int) or not 0 <= high - low <= 100:
            raise SchemaError(f"response_format: property {key!r} must be an integer with "
                              "minimum and maximum (at most 101 values)")
        fields.append((key, low, high))
    return fields


def constrained_json(model: Any, tokenizer: Any, prompt_ids: Any,
                     fields: list[tuple[str, int, int]]) -> str:
    """The verdict object, each value chosen digit by digit: at every step the most
    likely token among those that keep the number allowed (a digit that extends it
    toward an allowed value, or the closing `,`/`}` once it is one). Needs a tokenizer
    that writes each digit as one token (Llama-3, SmolLM, Qwen do)."""
    step = _Stepper(model, prompt_ids)
    text = ""
    for i, (key, low, high) in enumerate(fields):
        part = ("{" if i == 0 else " ") + json.dumps(key) + ": "  # "," came with the number
        step.feed(tokenizer(part, add_special_tokens=False)["input_ids"])
        closer = "," if i < len(fields) - 1 else "}"
        text += part + _choose_number(step, tokenizer, low, high, closer) + closer
    return text


def _single_token(tokenizer: Any, text: str) -> int:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        raise SchemaError(f"this model's tokenizer writes {text!r} as {len(ids)} tokens; "
                          "structured output needs one token per digit")
    return ids[0]


def _choose_number(step: "_Stepper", tokenizer: Any, low: int, high: int, closer: str) -> str:
    allowed = {str(v) for v in range(low, high + 1)}
    digits = {_single_token(tokenizer, str(d)): str(d) for d in range(10)}
    close_id = _single_token(tokenizer, closer)
    number = ""
    while True:
        options = {t: d for t, d in digits.items()
                   if any(a.startswith(number + d) for a in allowed)}
        if number in allowed:
            options[close_id] = ""
        logits = step.logits
        best = max(options, key=lambda t: float(logits[t]))
        step.feed([best])
        if best == close_id:
            return number
        number += options[best]


class _Stepper:
    """Greedy decoding state: the model's KV cache and its next-token logits."""

    def __init__(self, model: Any, prompt_ids: Any) -> None:
        self.model, self.past, self.logits = model, None, None
        self._run(prompt_ids)

    def feed(self, ids: list[int]) -> None:
        import torch
        self._run(torch.tensor([ids]))

    def _run(self, ids: Any) -> None:
        import torch
        with torch.no_grad():
            out = self.model(ids, past_key_values=self.past, use_cache=True)
        self.past, self.logits = out.past_key_values, out.logits[0, -1]
