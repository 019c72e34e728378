"""POST to an OpenAI-compatible `/chat/completions`, with a per-request time limit, an
overall deadline, retries with exponential backoff (429, 5xx, timeouts, dropped
connections; `Retry-After` honoured), and a concurrency limit per endpoint.

stdlib only (urllib): the verifier runs in the pool's worker processes, which should
not need an HTTP library installed. The concurrency limit is shared by every process on
this machine: the pool runs one item per worker process, so an in-process semaphore
would limit nothing; instead each request holds one of `max_concurrency` lock files
for its endpoint (flock, released by the kernel if the process dies).
"""

from __future__ import annotations

import email.utils
import fcntl
import hashlib
import http.client
import json
import os
import random
import socket
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rlvr.verifiers.judge.parse import Unparseable

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class JudgeUnavailable(RuntimeError):
    """No usable answer within the retries and the deadline (or a non-retryable HTTP
    error); the message says what happened last."""


@dataclass(frozen=True)
class Endpoint:
    base_url: str            # e.g. http://127.0.0.1:8200/v1 (".../chat/completions" is added)
    api_key: str | None = None
    timeout_s: float = 30.0  # one request
    total_timeout_s: float = 100.0  # every attempt, backoff and slot wait together
    retries: int = 3         # attempts after the first
    backoff_s: float = 0.5   # first retry delay; doubles each time (with jitter)
    max_backoff_s: float = 8.0
    max_concurrency: int = 4

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


@dataclass
class CallStats:
    attempts: int = 0
    retries: int = 0
    waited_s: float = 0.0  # backoff sleeps


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def post_chat(endpoint: Endpoint, payload: dict[str, Any], stats: CallStats,
              sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """The response body (parsed JSON) of one chat completion, retrying as described."""
    deadline = time.monotonic() + endpoint.total_timeout_s
    data = json.dumps(payload).encode()
    last = "no attempt made"
    for attempt in range(endpoint.retries + 1):
        stats.attempts += 1
        try:
            with _slot(endpoint, deadline):
                return _post_once(endpoint, data, deadline)
        except _Retryable as exc:
            last = str(exc)
            if attempt == endpoint.retries:
                break
            delay = _delay(endpoint, attempt, exc.retry_after)
            if time.monotonic() + delay >= deadline:
                last += f" (next retry would pass the {endpoint.total_timeout_s:g} s deadline)"
                break
            stats.retries += 1
            stats.waited_s += delay
            sleep(delay)
    raise JudgeUnavailable(f"judge endpoint {endpoint.url}: {last} after "
                           f"{stats.attempts} attempt(s)")


def _delay(endpoint: Endpoint, attempt: int, retry_after: float | None) -> float:
    if retry_after is not None:  # the server knows best; still bounded by the deadline
        return max(0.0, retry_after)
    base = min(endpoint.max_backoff_s, endpoint.backoff_s * 2 ** attempt)
    return base * (0.5 + random.random() / 2)  # jitter: many workers do not retry in step


def _post_once(endpoint: Endpoint, data: bytes, deadline: float) -> dict[str, Any]:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise _Retryable("deadline passed")
    headers = {"Content-Type": "application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    request = urllib.request.Request(endpoint.url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=min(endpoint.timeout_s, remaining)) as r:
            raw = r.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode("utf-8", "replace")
        message = f"HTTP {exc.code}: {detail}"
        if exc.code in RETRY_STATUSES:
            raise _Retryable(message, retry_after_seconds(exc.headers.get("Retry-After")))
        raise JudgeUnavailable(f"judge endpoint {endpoint.url}: {message}") from None
    except (TimeoutError, socket.timeout):
        raise _Retryable(f"timed out after {min(endpoint.timeout_s, remaining):.1f} s")
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, (TimeoutError, socket.timeout)):
            raise _Retryable(f"timed out after {min(endpoint.timeout_s, remaining):.1f} s")
        raise _Retryable(f"cannot connect: {exc.reason}")
    except (ConnectionError, http.client.HTTPException) as exc:
        raise _Retryable(f"connection failed: {type(exc).__name__}: {exc}")
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise Unparseable(f"response body is not JSON: {raw[:200]!r}") from None


def retry_after_seconds(value: str | None) -> float | None:
    """A `Retry-After` header as seconds: delta-seconds or an HTTP date; None if absent
    or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class _slot:
    """Hold one of the endpoint's `max_concurrency` lock files while a request runs."""

    def __init__(self, endpoint: Endpoint, deadline: float) -> None:
        self.endpoint, self.deadline, self.fd = endpoint, deadline, -1

    def __enter__(self) -> "_slot":
        folder = slot_dir(self.endpoint.base_url)
        while True:
            for i in range(self.endpoint.max_concurrency):
                fd = os.open(folder / f"slot-{i}", os.O_CREAT | os.O_RDWR, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                self.fd = fd
                return self
            if time.monotonic() >= self.deadline:
                raise _Retryable(f"no free request slot of {self.endpoint.max_concurrency} "
                                 "before the deadline")
            time.sleep(0.02 + random.random() * 0.03)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def slot_dir(base_url: str) -> Path:
    """Where the lock files for `base_url` live ($RLVR_JUDGE_SLOTS or the temp dir)."""
    root = Path(os.environ.get("RLVR_JUDGE_SLOTS") or Path(tempfile.gettempdir())
                / f"rlvr-judge-slots-{os.getuid()}")
    folder = root / hashlib.sha256(base_url.rstrip("/").encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    return folder
