"""Connection limits for rlvr's HTTP servers (`rlvr serve`, `rlvr view`), on uvicorn.

uvicorn bounds what a request does once its head has arrived (`limit_concurrency`
answers 503 beyond N tasks; `timeout_keep_alive` closes an idle connection between
requests), but not a client that sends its head slowly, holds more sockets than the
process has descriptors, or stops reading an answer. `guarded_protocol` wraps
uvicorn's own HTTP protocol class (httptools or h11, whichever it picks) with those
missing limits; the parsing and everything else stay uvicorn's:

- a request head (request line + headers) must be complete `header_timeout_s` after
  the connection opens or the previous answer ends, and at most `max_head_kb` long;
- beyond `max_connections` open connections a new one gets 503 and is closed at once,
  so slow clients cannot take every descriptor (the cap is kept under RLIMIT_NOFILE);
- a client that stops reading for `write_timeout_s` while an answer waits is dropped
  (the answer is in the transport's buffer: it cannot grow past one answer).

The body's own deadline (`body_timeout_s`) is the app's to enforce while it reads.
"""

from __future__ import annotations

import asyncio
import resource
from dataclasses import dataclass
from typing import Any

_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n"
         b"content-length: 32\r\nconnection: close\r\n\r\ntoo many connections; retry later")
_HEAD_TOO_LARGE = (b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n"
                   b"connection: close\r\n\r\n")
# descriptors the process keeps for itself (worker pipes, files, the listener)
_RESERVED_FDS = 64


@dataclass(frozen=True)
class Limits:
    """header_timeout_s: the request head's deadline (from connect or the last answer).
    body_timeout_s:   the whole body's deadline, from the head (408 past it).
    write_timeout_s:  how long a client may leave an answer unread.
    max_connections:  open connections (capped under the descriptor limit); also
                      uvicorn's limit_concurrency.
    max_head_kb:      the largest request head read.
    """

    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0
    write_timeout_s: float = 60.0
    max_connections: int = 512
    max_head_kb: int = 64

    def __post_init__(self) -> None:
        bad = [name for name in ("header_timeout_s", "body_timeout_s", "write_timeout_s",
                                 "max_connections", "max_head_kb") if not getattr(self, name) > 0]
        if bad:
            raise ValueError(f"server setting {bad[0]} must be positive")

    def connection_cap(self) -> int:
        """max_connections, lowered to fit the process's descriptor limit."""
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return self.max_connections
        return max(1, min(self.max_connections, soft - _RESERVED_FDS))


def uvicorn_config(app: Any, sock_backlog: int, limits: Limits) -> Any:
    """uvicorn.Config for `app` with `limits` applied (uvicorn's own knobs where it has
    them, `guarded_protocol` for the rest)."""
    import uvicorn
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    cap = limits.connection_cap()
    return uvicorn.Config(app, log_level="warning", access_log=False, backlog=sock_backlog,
                          http=guarded_protocol(AutoHTTPProtocol, limits, cap),
                          limit_concurrency=cap,
                          timeout_keep_alive=limits.header_timeout_s,
                          h11_max_incomplete_event_size=limits.max_head_kb * 1024,
                          server_header=False)


def guarded_protocol(base: type, limits: Limits, cap: int) -> type:
    """`base` (a uvicorn HTTP protocol class) with the limits above."""

    class Guarded(base):  # type: ignore[valid-type, misc]
        _head_timer: asyncio.TimerHandle | None = None
        _write_timer: asyncio.TimerHandle | None = None
        _head_bytes = 0

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if len(self.connections) > cap:
                transport.write(_BUSY)
                transport.close()
                return
            self._await_head()

        def connection_lost(self, exc: Exception | None) -> None:
            for timer in (self._head_timer, self._write_timer):
                if timer is not None:
                    timer.cancel()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._between_requests():  # still no complete head
                self._head_bytes += len(data)
                if self._head_bytes > limits.max_head_kb * 1024:
                    self._drop(_HEAD_TOO_LARGE)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._await_head()

        def pause_writing(self) -> None:
            super().pause_writing()
            if self._write_timer is None:
                self._write_timer = self.loop.call_later(limits.write_timeout_s, self._drop)

        def resume_writing(self) -> None:
            super().resume_writing()
            if self._write_timer is not None:
                self._write_timer.cancel()
                self._write_timer = None

        def _between_requests(self) -> bool:
            # uvicorn (httptools and h11 alike) makes a request cycle once a head is
            # parsed: no cycle, or an answered one, means no head is complete yet.
            return self.cycle is None or self.cycle.response_complete

        def _await_head(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            self._head_bytes = 0
            self._head_timer = self.loop.call_later(limits.header_timeout_s, self._head_due)

        def _head_due(self) -> None:
            self._head_timer = None
            if self._between_requests():
                self._drop()

        def _drop(self, reply: bytes = b"") -> None:
            if self.transport.is_closing():
                return
            if reply:
                self.transport.write(reply)
                self.transport.close()
            else:
                self.transport.abort()

    Guarded.__name__ = f"Guarded{base.__name__}"
    return Guarded
