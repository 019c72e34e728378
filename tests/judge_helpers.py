"""A scripted OpenAI-compatible endpoint for the judge's tests: a stdlib HTTP server on
127.0.0.1 (free port) whose answers come from a Python function of the request."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

# script(body, headers) -> (status, extra headers, response body as dict or raw bytes)
Script = Callable[[dict, dict], tuple[int, dict, Any]]


def chat_body(content: str, prompt_tokens: int = 100, completion_tokens: int = 10) -> dict:
    return {"id": "x", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


def answering(content: str) -> Script:
    return lambda body, headers: (200, {}, chat_body(content))


class ScriptedEndpoint:
    """Use as a context manager; `.base_url` for the judge, `.requests` what it got,
    `.max_in_flight` the most requests it was serving at once."""

    def __init__(self, script: Script, delay_s: float = 0.0) -> None:
        self.script, self.delay_s = script, delay_s
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> "ScriptedEndpoint":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def user_messages(self) -> list[str]:
        return [next(m["content"] for m in r["messages"] if m["role"] == "user")
                for r in self.requests]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with endpoint._lock:
                    endpoint.requests.append(body)
                    endpoint.headers.append(dict(self.headers))
                    endpoint.in_flight += 1
                    endpoint.max_in_flight = max(endpoint.max_in_flight, endpoint.in_flight)
                try:
                    time.sleep(endpoint.delay_s)
                    status, extra, payload = endpoint.script(body, dict(self.headers))
                finally:
                    with endpoint._lock:
                        endpoint.in_flight -= 1
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    for name, value in extra.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        return Handler
