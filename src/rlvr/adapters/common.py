"""Helpers the adapters share: plain Python values from dataset rows, completion text
from chat messages, a lazily started process-wide pool, and the rule that a dataset
column (TRL's verifier column, verl's data_source and extra_info, an OpenRLHF label)
names a verifier, never code: `data_verifier` refuses an import path the operator did
not list as a plugin (`plugins=` of each adapter, or `configure(plugins=...)`)."""

from __future__ import annotations

import atexit
import functools
import inspect
import json
import os
import queue
import threading
from typing import Any, Sequence

from rlvr.verifiers.base import Verdict
from rlvr.verifiers.pool import Case, VerifierPool, default_workers
from rlvr.verifiers.registry import add_plugins, plugins, resolve_factory, spec_for
from rlvr.verifiers.untrusted import check_name

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


def data_verifier(name: Any, where: str, field: str) -> str:
    """`name` from a dataset column, as a verifier name; ValueError (rlvr's Refused)
    naming `where` and `field` when it is an import path the operator did not list."""
    check_name(name, where, field)
    return name


def use_plugins(paths: Sequence[str] | None, where: str = "plugins") -> None:
    """Install the operator's plugins (adapter arguments, never data) in this process;
    the shared pool's workers get them too."""
    if paths:
        add_plugins(list(paths), where)


def completion_text(completion: Any) -> str:
    """The text of a completion: a string as is; for conversational data (a list of
    message dicts, as TRL passes them) the assistant messages' contents joined; content
    given as a list of parts contributes its text parts. A message's
    `reasoning_content` (what TRL's chat-template parsing splits off the <think> block)
    goes back in front of its content as `<think>...</think>`, so the text is what the
    model wrote and a format verifier sees the reasoning block."""
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
            reasoning = message.get("reasoning_content")
            if isinstance(reasoning, str) and reasoning:
                content = f"<think>{reasoning}</think>{content}"
            texts.append(str(content))
        return "\n".join(texts)
    raise TypeError(f"{what} must be a string or chat messages, got {type(value).__name__}")


class SharedPool:
    """Verifier workers shared by every call in this process, with no global lock:
    single-worker `VerifierPool`s lent out per call, so concurrent callers (verl's
    reward loop calling compute_score per item, TRL's async reward functions) grade in
    parallel, and one batch spreads over every idle worker, each taking the next item
    (a slow item holds up its worker only). Started on first use, closed at exit.

    Plugins: every plugin this process installed (`configure(plugins=...)` or an
    adapter's `plugins=`) goes to the workers; a pool built before a plugin was added
    is replaced the next time it is lent.
    Workers: `configure(workers=N)`, else $RLVR_VERIFIER_WORKERS, else this process's
    share of the cores: cores / $LOCAL_WORLD_SIZE, so the ranks of one machine under
    accelerate or torchrun do not each start a worker per core.
    With $RLVR_SERVE_URLS (comma-separated `rlvr serve` URLs; token $RLVR_SERVE_TOKEN)
    items are graded on those servers instead.
    """

    def __init__(self) -> None:
        self.workers: int | None = None
        self._idle: queue.SimpleQueue[VerifierPool] = queue.SimpleQueue()
        self._pools: list[VerifierPool] = []
        self._remote: Any = None
        self._lock = threading.Lock()

    def configure(self, workers: int | None = None,
                  plugin_paths: Sequence[str] | None = None) -> None:
        """Set the worker count before the first call (later calls keep the pools) and
        install the operator's plugins."""
        self.workers = workers
        use_plugins(plugin_paths)

    def size(self) -> int:
        if self.workers:
            return self.workers
        if os.environ.get("RLVR_VERIFIER_WORKERS"):
            return max(1, int(os.environ["RLVR_VERIFIER_WORKERS"]))
        ranks = max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1))
        return max(1, default_workers() // ranks)

    def verify(self, cases: Sequence[Case]) -> list[Verdict]:
        """Verdicts for `cases`, in order; safe to call from many threads at once."""
        if not cases:
            return []
        remote = self._remote_pool()
        if remote is not None:
            return remote.verify(cases)
        results: list[Verdict | None] = [None] * len(cases)
        order = iter(range(len(cases)))
        take = threading.Lock()

        def drain() -> None:
            pool = self._borrow()
            try:
                while True:
                    with take:
                        index = next(order, None)
                    if index is None:
                        return
                    results[index] = pool.verify([cases[index]])[0]
            finally:
                self._idle.put(pool)

        helpers = [threading.Thread(target=drain, daemon=True)
                   for _ in range(min(len(cases), self.size()) - 1)]
        for thread in helpers:
            thread.start()
        drain()
        for thread in helpers:
            thread.join()
        return [r if r is not None else Verdict.error("lost") for r in results]

    def _borrow(self) -> VerifierPool:
        with self._lock:
            if len(self._pools) < self.size():
                pool = VerifierPool(workers=1)
                self._pools.append(pool)
                if len(self._pools) == 1:
                    atexit.register(self.close)
                return pool
        pool = self._idle.get()  # every worker is busy: wait for one
        if pool.plugins != plugins():  # built before a plugin was added: rebuild
            pool.close()
            fresh = VerifierPool(workers=1)
            with self._lock:
                self._pools[self._pools.index(pool)] = fresh
            pool = fresh
        return pool

    def _remote_pool(self) -> Any:
        urls = [u.strip() for u in os.environ.get("RLVR_SERVE_URLS", "").split(",") if u.strip()]
        if not urls:
            return None
        with self._lock:
            if self._remote is None:
                from rlvr.serve.remote_pool import RemoteVerifierPool

                self._remote = RemoteVerifierPool(urls)
                atexit.register(self.close)
            return self._remote

    def close(self) -> None:
        with self._lock:
            pools, self._pools = self._pools, []
            remote, self._remote = self._remote, None
        for pool in pools:
            pool.close()
        self._idle = queue.SimpleQueue()
        if remote is not None:
            remote.close()


SHARED = SharedPool()  # the one both adapters use


def configure(workers: int | None = None, plugins: Sequence[str] | None = None) -> None:
    """Worker processes for the adapters' shared pool in this process (call before the
    first reward; default: this rank's share of the cores, see `SharedPool`), and the
    operator's plugins ("module:Class" verifiers that data may then name)."""
    SHARED.configure(workers, plugins)
