"""`rlvr serve` in a subprocess for tests: started on a free loopback port, stopped (or
killed) by the test, plus a deliberately slow verifier for the queue and deadline tests."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from cli_helpers import SRC

TESTS = str(Path(__file__).resolve().parent)


class Server:
    """A running `rlvr serve`; `url` is http://127.0.0.1:PORT."""

    def __init__(self, *args: str, token: str = "", env: dict[str, str] | None = None,
                 preexec_fn=None, command: tuple[str, ...] = ("-m", "rlvr", "serve", "--port",
                                                              "0")) -> None:
        """`token` is given through $RLVR_SERVE_TOKEN (and used by `headers()`); `env`
        adds variables to the server's environment; `command`: another server that binds
        a free loopback port and prints its URL first (tests/openenv_helpers.py)."""
        full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [SRC, TESTS, os.environ.get("PYTHONPATH", "")])}
        for name in ("RLVR_SERVE_TOKEN", "RLVR_SERVE_TOKEN_FILE"):
            full_env.pop(name, None)
        if token:
            full_env["RLVR_SERVE_TOKEN"] = token
        full_env.update(env or {})
        self.process = subprocess.Popen(
            [sys.executable, *command, *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env,
            preexec_fn=preexec_fn)
        line = self.process.stdout.readline()  # printed once the workers are ready
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not match:
            self.process.kill()
            raise RuntimeError(f"{' '.join(command)} did not start: {line!r} "
                               f"{self.process.stderr.read()[-2000:]}")
        self.url = f"http://127.0.0.1:{match.group(1)}"
        self.token = token

    def headers(self) -> dict[str, str]:
        """The token (when set) and the JSON content type every POST must declare."""
        auth = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return {**auth, "Content-Type": "application/json"}

    def post(self, path: str, body: object, timeout: float = 120.0, **kw) -> httpx.Response:
        return httpx.post(self.url + path, content=json.dumps(body), timeout=timeout,
                          headers={**self.headers(), **kw.pop("headers", {})}, **kw)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would; its workers see EOF and exit."""
        self.process.kill()
        self.process.wait()


class SlowVerifier:
    """Sleeps `reference` seconds, then passes (loaded by "serve_helpers:SlowVerifier"
    in the server's worker processes)."""

    name = "slow"

    def check_reference(self, reference):
        return None

    def verify(self, completion, reference):
        from rlvr.verifiers.base import Verdict

        time.sleep(float(reference))
        return Verdict.correct("slept", seconds=float(reference))


def contract_lines(*names: str, every: int = 1) -> list[dict]:
    """tests/data math files as `rlvr verify` input lines (every `every`-th row)."""
    lines = []
    for name in names:
        rows = (Path(TESTS) / "data" / name).read_text().splitlines()
        for row in rows[::every]:
            record = json.loads(row)
            line = {"verifier": "math", "completion": record["completion"],
                    "reference": record["reference"]}
            if record.get("prompt"):
                line["prompt"] = record["prompt"]
            lines.append(line)
    return lines
