"""Shared pieces of tests/test_serve_security.py: a server launcher with a canary secret
in its environment (what a request may choose), item builders, a listener that no request
may reach, a judge endpoint stand-in, the private-network-namespace runner (an exposed
bind) and a client that does not read its answer."""

from __future__ import annotations

import http.server
import os
import select
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from serve_helpers import Server

SRC = str(Path(__file__).resolve().parents[1] / "src")
TESTS = str(Path(__file__).resolve().parent)
CHOICE_TOKEN = "request-choice-test-token"
CANARY_VAR = "RLVR_TEST_CANARY_SECRET"
CANARY = f"canary-{uuid.uuid4().hex}"
SLOW = "serve_helpers:SlowVerifier"  # sleeps its reference's seconds, then passes
SERVER_LIMIT_S = 2.0


class _Serve(Server):
    """`rlvr serve` (tests/serve_helpers.Server) with the canary in its environment and
    the choice token; every answer body is kept, to search for the canary."""

    def __init__(self, *args: str) -> None:
        super().__init__(*args, token=CHOICE_TOKEN, env={CANARY_VAR: CANARY})
        self.answers: list[str] = []

    def post(self, path: str, body: object, timeout: float = 60.0) -> httpx.Response:
        response = super().post(path, body, timeout=timeout)
        self.answers.append(response.text)
        return response


def _connected(sock: socket.socket, wait_s: float = 1.0) -> bool:
    readable, _, _ = select.select([sock], [], [], wait_s)
    return bool(readable)


def _refused(response: httpx.Response, field: str, *words: str) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["field"] == field, body
    for word in words:
        assert word in body["error"], body


def _item(verifier: str, options: dict | None = None, reference: object = "1",
          completion: str = "#### 1") -> dict:
    item = {"verifier": verifier, "completion": completion, "reference": reference}
    if options is not None:
        item["options"] = options
    return item


def _settle(server: _Serve) -> None:
    """An ordinary item graded after the attack: had the attack been queued, the one
    worker would have run it first."""
    response = server.post("/verify", {"items": [_item("exact")]})
    assert response.json()["verdicts"][0]["passed"] is True


class _JudgeEndpoint(http.server.BaseHTTPRequestHandler):
    seen: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        length = int(self.headers.get("Content-Length", 0))
        _JudgeEndpoint.seen.append({"auth": self.headers.get("Authorization"),
                                    "body": self.rfile.read(length)})
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args):
        pass


def _read_until_closed(sock: socket.socket, limit_s: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and when it did."""
    start, data = time.monotonic(), b""
    sock.settimeout(limit_s)
    try:
        while chunk := sock.recv(4096):
            data += chunk
    except ConnectionResetError:
        pass
    return data, time.monotonic() - start


def _port(server) -> int:
    return int(server.url.rsplit(":", 1)[1])


_RECORD_BINDS = """
import runpy, socket, sys
log = open(sys.argv[1], "a")
_bind = socket.socket.bind
def bind(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        log.write(repr(address) + "\\n"); log.flush()
    return _bind(self, address)
socket.socket.bind = bind
sys.argv = ["rlvr", *sys.argv[2:]]
runpy.run_module("rlvr", run_name="__main__")
"""


def _in_private_netns(tmp_path: Path, args: list[str], env: dict[str, str],
                      wait_s: float = 60) -> tuple[int | None, str, str, str]:
    """`rlvr ARGS` in a fresh network namespace (only a loopback device, down): its
    exit code (None if still running after it printed a URL), stdout, stderr, and
    every inet bind it attempted."""
    log = tmp_path / f"binds-{len(list(tmp_path.iterdir()))}.log"
    log.write_text("")
    script = tmp_path / "record_binds.py"
    script.write_text(_RECORD_BINDS)
    full = {k: v for k, v in os.environ.items()
            if k not in ("RLVR_SERVE_TOKEN", "RLVR_SERVE_TOKEN_FILE")}
    full.update(env, PYTHONPATH=os.pathsep.join([SRC, TESTS]))
    process = subprocess.Popen(["unshare", "-n", sys.executable, str(script), str(log), *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=full)
    line = process.stdout.readline()
    if "http://" in line:  # it serves: note it and stop it
        process.terminate()
        out, err = process.communicate(timeout=30)
        return None, line + out, err, log.read_text()
    out, err = process.communicate(timeout=wait_s)
    return process.returncode, line + out, err, log.read_text()


def _require_netns() -> None:
    try:
        probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True,
                               timeout=30)
    except (FileNotFoundError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot make a private network namespace: {exc}")
    if probe.returncode != 0:
        pytest.skip("cannot make a private network namespace (unshare -n: "
                    f"{probe.stderr.strip() or probe.returncode}); the exposed-bind "
                    "refusal is not run on a real interface")


def _unread_answer(write_timeout_s: float, answer_mb: int = 16) -> tuple[int, int]:
    """Bytes a client gets of a big answer when it reads nothing for 3 s, then all it
    can; and the answer's size. The server is uvicorn with rlvr's connection limits
    (rlvr.serve.transport), in this process."""
    uvicorn = pytest.importorskip("uvicorn", reason="rlvr serve runs on uvicorn (rlvr[serve])")
    import threading

    from rlvr.serve.listen import bind
    from rlvr.serve.transport import Limits, uvicorn_config

    body = b"x" * (answer_mb * 1024 * 1024)

    async def app(scope, receive, send):
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})

    sock = bind("127.0.0.1", 0, 16)
    server = uvicorn.Server(uvicorn_config(app, 16, Limits(write_timeout_s=write_timeout_s)))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.05)
        with socket.socket() as client:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            client.connect(sock.getsockname())
            client.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            time.sleep(3)  # reads nothing: the answer waits in the server's buffers
            client.settimeout(20)
            got = 0
            try:
                while got < len(body) and (chunk := client.recv(1 << 20)):
                    got += len(chunk)
            except ConnectionResetError:
                pass
    finally:
        server.should_exit = True
        thread.join(10)
    return got, len(body)
