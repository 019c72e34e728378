"""Helpers both adapters share: plain Python values from dataset rows, completion text
from chat messages, a lazily started process-wide pool."""

from __future__ import annotations

import atexit
import functools
import inspect
import json
import threading
from typing import Any

from rlvr.verifiers.pool import VerifierPool
from rlvr.verifiers.registry import resolve_factory, spec_for

# Verifiers whose reference is a string in its own right; a JSON-looking string is
# parsed into an object for every other verifier (parquet and Arrow columns often
# hold structured references as JSON text).
TEXT_REFERENCE_VERIFIERS = frozenset({"math", "exact"})


def to_plain(value: Any) -> Any:
    """Lists, dicts and scalars from what datasets hand over: numpy arrays and scalars
    (verl's non_tensor_batch, parquet rows) become lists and Python numbers."""
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return to_plain(value.tolist())  # numpy array or numpy scalar
    return value


def normalise_reference(verifier: str, reference: Any) -> Any:
    reference = to_plain(reference)
    if isinstance(reference, str) and verifier not in TEXT_REFERENCE_VERIFIERS \
            and reference.lstrip()[:1] in "{[":
        try:
            return json.loads(reference)
        except json.JSONDecodeError:
            return reference
    return reference


@functools.lru_cache(maxsize=256)
def _check_options(verifier: str, options_json: str) -> None:
    options = json.loads(options_json)
    factory = resolve_factory(spec_for(verifier).target)
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as exc:
        raise ValueError(f"verifier {verifier!r}: bad options {options}: {exc}") from None
    if verifier == "composite":
        factory(**options)  # validates every component (weights, names, verifiers)


def check_options(verifier: str, options: dict[str, Any]) -> None:
    """Raise ValueError now, in the trainer, when `options` do not fit `verifier`;
    in a worker the same mistake would score every item 0 with reason "error"."""
    _check_options(verifier, json.dumps(options, sort_keys=True, default=str))


def completion_text(completion: Any) -> str:
    """The text of a completion: a string as is; for conversational data (a list of
    message dicts, as TRL passes them) the assistant messages' contents joined; content
    given as a list of parts contributes its text parts."""
    return _messages_text(completion, "assistant", "completion")


def prompt_text(prompt: Any) -> str | None:
    """The task text of a trainer's prompt (a string, or chat messages: the user turns),
    handed to verifiers that use it; None when the trainer passed none."""
    return None if prompt is None else _messages_text(prompt, "user", "prompt")


def _messages_text(value: Any, role: str, what: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = [value]
    if isinstance(value, (list, tuple)):
        texts = []
        for message in value:
            if not isinstance(message, dict):
                raise TypeError(f"{what} messages must be dicts, got {type(message).__name__}")
            if message.get("role", role) != role:
                continue
            content = message.get("content") or ""
            if isinstance(content, list):
                content = "".join(part.get("text", "") for part in content
                                  if isinstance(part, dict) and part.get("type", "text") == "text")
            texts.append(str(content))
        return "\n".join(texts)
    raise TypeError(f"{what} must be a string or chat messages, got {type(value).__name__}")


class SharedPool:
    """One VerifierPool per process, started on first use and closed at exit; calls are
    serialised because a pool runs one batch at a time."""

    def __init__(self) -> None:
        self._pool: VerifierPool | None = None
        self.lock = threading.Lock()

    def get(self) -> VerifierPool:
        if self._pool is None:
            self._pool = VerifierPool()
            atexit.register(self.close)
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
