"""A client for one or many `rlvr serve` servers (httpx, the `serve` extra).

    client = ServeClient(["http://cpu-1:8000", "http://cpu-2:8000"], token="s3cret")
    lines = client.verify([{"verifier": "math", "completion": "...", "reference": "4"}])

Items are cut into batches of `batch_size`, up to `concurrency` batches in flight, and
each batch goes to the server with the fewest of this client's items in flight (ties
in turn). A 429 is retried after the server's Retry-After, on whichever server is then
least loaded, until `max_wait_s`. A server that cannot be reached, or that drops a
request (it died), is set aside and its batch goes to another; when none is left the
error names every URL and what happened to it. Grading is pure, so a resent batch gets
the same verdicts.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from rlvr.errors import ExternalFault
from rlvr.serve.settings import token_from_env

RETRY_AFTER_CAP_S = 30.0
SET_ASIDE_S = 30.0  # a server that failed is tried again after this long


class ServeError(ExternalFault, RuntimeError):
    """A request the servers could not answer; the message names the URL(s)."""


class _Server:
    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.in_flight = 0
        self.failure = ""  # why it was last set aside ("" = never)
        self.failed_at = 0.0

    def usable(self, now: float) -> bool:
        return not self.failure or now - self.failed_at > SET_ASIDE_S


class ServeClient:
    """Thread-safe; use as a context manager or call `close()`.

    urls:        one server URL or several ("http://host:port").
    token:       the shared token (None: $RLVR_SERVE_TOKEN, unset = none).
    batch_size:  items per request (keep it below the servers' --max-items).
    concurrency: requests in flight at once, over all servers.
    deadline_s:  sent with each request (None: the server's own deadline).
    max_wait_s:  how long 429s may keep a batch waiting before giving up.
    """

    def __init__(self, urls: str | Sequence[str], token: str | None = None,
                 batch_size: int = 256, concurrency: int = 8, deadline_s: float | None = None,
                 max_wait_s: float = 600.0, connect_timeout_s: float = 10.0) -> None:
        try:
            import httpx
        except ImportError:
            raise ImportError("the rlvr serve client needs httpx: pip install 'rlvr[serve]'"
                              ) from None
        urls = [urls] if isinstance(urls, str) else list(urls)
        if not urls:
            raise ValueError("ServeClient needs at least one server URL")
        self._servers = [_Server(u) for u in urls]
        self.batch_size, self.concurrency = max(1, batch_size), max(1, concurrency)
        self.deadline_s, self.max_wait_s = deadline_s, max_wait_s
        token = token_from_env(token)
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        # Read timeout: the server answers by its deadline; allow for the queue ahead.
        read_s = (deadline_s or 300.0) + 60.0
        self._http = httpx.Client(timeout=httpx.Timeout(read_s, connect=connect_timeout_s),
                                  limits=httpx.Limits(max_connections=self.concurrency * 2))
        self._lock = threading.Lock()
        self._turn = 0
        self._executor = ThreadPoolExecutor(self.concurrency,
                                            thread_name_prefix="rlvr-serve-client")

    def __enter__(self) -> "ServeClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._http.close()

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self._servers]

    # -- checks ---------------------------------------------------------------------------

    def check(self) -> None:
        """ServeError unless every server answers and accepts the token (GET /metrics
        needs it, /health does not)."""
        import httpx

        for server in self._servers:
            try:
                response = self._http.get(server.url + "/metrics", headers=self._headers,
                                          timeout=10.0)
            except httpx.HTTPError as exc:
                raise ServeError(f"rlvr serve at {server.url} is unreachable: "
                                 f"{_describe(exc)}") from None
            if response.status_code == 401:
                raise ServeError(f"rlvr serve at {server.url} refused the token (set "
                                 "the same token on both sides)")
            if response.status_code != 200:
                raise ServeError(f"rlvr serve at {server.url}: GET /metrics answered "
                                 f"{response.status_code}: {response.text[:300]}")

    # -- grading --------------------------------------------------------------------------

    def verify(self, items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The verdict line of every item (a `rlvr verify` input line), in order."""
        batches = [list(items[i:i + self.batch_size])
                   for i in range(0, len(items), self.batch_size)]
        if len(batches) <= 1:
            return self._post_batch(batches[0]) if batches else []
        lines: list[dict[str, Any]] = []
        for part in self._executor.map(self._post_batch, batches):
            lines.extend(part)
        return lines

    def _post_batch(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        body: dict[str, Any] = {"items": items}
        if self.deadline_s is not None:
            body["deadline_s"] = self.deadline_s
        text = json.dumps(body, ensure_ascii=False)
        try:
            payload = text.encode()
        except UnicodeEncodeError:  # a lone surrogate in a completion: escape, don't fail
            payload = json.dumps(body).encode()
        give_up = time.monotonic() + self.max_wait_s
        while True:
            server = self._choose(len(items))
            try:
                answer = self._send(server, payload, len(items))
            finally:
                with self._lock:
                    server.in_flight -= len(items)
            if isinstance(answer, list):
                return answer
            if time.monotonic() + answer > give_up:
                raise ServeError(f"rlvr serve at {server.url}: still answering 429 (queue "
                                 f"full) after {self.max_wait_s:g} s")
            time.sleep(answer)

    def _choose(self, n: int) -> _Server:
        with self._lock:
            now = time.monotonic()
            usable = [s for s in self._servers if s.usable(now)]
            if not usable:
                raise ServeError("no rlvr serve server left: " + "; ".join(
                    f"{s.url}: {s.failure}" for s in self._servers))
            self._turn += 1
            rotated = usable[self._turn % len(usable):] + usable[:self._turn % len(usable)]
            server = min(rotated, key=lambda s: s.in_flight)
            server.in_flight += n
            return server

    def _send(self, server: _Server, payload: bytes, n: int) -> list[dict[str, Any]] | float:
        """The verdict lines, or seconds to wait before retrying (429). A server that
        fails is set aside and 0.0 returned, so the batch goes elsewhere."""
        import httpx

        try:
            response = self._http.post(server.url + "/verify", content=payload,
                                       headers={**self._headers,
                                                "Content-Type": "application/json"})
        except httpx.HTTPError as exc:
            with self._lock:
                server.failure, server.failed_at = _describe(exc), time.monotonic()
            return 0.0
        if response.status_code == 429:
            return _retry_after(response.headers.get("retry-after"))
        if response.status_code != 200:
            raise ServeError(f"rlvr serve at {server.url}: POST /verify answered "
                             f"{response.status_code}: {response.text[:500]}")
        try:
            lines = response.json()["verdicts"]
        except (ValueError, KeyError, TypeError):
            raise ServeError(f"rlvr serve at {server.url}: not a verdicts answer: "
                             f"{response.text[:300]}") from None
        if not isinstance(lines, list) or len(lines) != n:
            raise ServeError(f"rlvr serve at {server.url}: {n} items sent, "
                             f"{len(lines) if isinstance(lines, list) else 'no'} verdicts back")
        return lines


def _retry_after(value: str | None) -> float:
    try:
        seconds = float(value) if value is not None else 1.0
    except ValueError:
        seconds = 1.0
    return min(RETRY_AFTER_CAP_S, max(0.05, seconds))


def _describe(exc: Exception) -> str:
    kind = {"ConnectError": "connection refused or host down",
            "ConnectTimeout": "no answer to connect",
            "ReadTimeout": "no answer in time",
            "RemoteProtocolError": "the server closed the connection mid-request (did it "
                                   "die?)",
            "ReadError": "the connection broke mid-request (did the server die?)"}
    name = type(exc).__name__
    detail = str(exc)[:200]
    return f"{kind.get(name, name)} ({detail})" if detail else kind.get(name, name)
