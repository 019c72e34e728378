"""OpenEnv servers in subprocesses for tests, on a free loopback port, stopped by the test:

- `toy`: an environment written against openenv-core alone (its Environment, Action,
  Observation and create_fastapi_app; nothing of rlvr): the target is the reset seed
  modulo 10; each step says "higher"/"lower", reward 1.0 and done on the target,
  reward 0.0 otherwise, done after 3 steps.
- `rlvr`: rlvr's own OpenEnv server (rlvr.environments.ecosystem.openenv_http) on a
  JSONL of task records.

    python tests/openenv_helpers.py toy
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SRC = str(TESTS.parent / "src")


class Server:
    """A running server; `url` is http://127.0.0.1:PORT."""

    def __init__(self, *argv: str, token: str = "") -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, str(TESTS),
                                                            os.environ.get("PYTHONPATH", "")])}
        for name in ("RLVR_SERVE_TOKEN", "RLVR_SERVE_TOKEN_FILE"):
            env.pop(name, None)
        if token:
            env["RLVR_SERVE_TOKEN"] = token
        self.process = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=env)
        line = self.process.stdout.readline()  # printed once the socket is bound
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if not match:
            self.process.kill()
            raise RuntimeError(f"server did not start: {line!r} "
                               f"{self.process.stderr.read()[-2000:]}")
        self.url = f"http://127.0.0.1:{match.group(1)}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()
        self.process.stderr.close()


def toy_server() -> Server:
    return Server(str(TESTS / "openenv_helpers.py"), "toy")


def rlvr_server(data: Path, token: str = "") -> Server:
    return Server("-m", "rlvr.environments.ecosystem.openenv_http", "--data", str(data),
                  "--id-field", "id", "--port", "0", token=token)


def _serve_toy() -> None:
    import socket

    import uvicorn
    from openenv.core.env_server.http_server import create_fastapi_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State

    class GuessAction(Action):
        message: str

    class GuessObservation(Observation):
        prompt: str = ""

    class Guess(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self.target, self._state = 0, State(step_count=0)

        def reset(self, seed=None, episode_id=None, **kwargs):
            self.target, self._state = (seed or 0) % 10, State(step_count=0)
            return GuessObservation(prompt="Guess my digit (0-9).")

        def step(self, action, timeout_s=None, **kwargs):
            self._state.step_count += 1
            guess = int(action.message.strip())
            if guess == self.target:
                return GuessObservation(prompt="right", reward=1.0, done=True)
            hint = "higher" if guess < self.target else "lower"
            return GuessObservation(prompt=hint, reward=0.0, done=self._state.step_count >= 3)

        @property
        def state(self):
            return self._state

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"toy OpenEnv server on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    app = create_fastapi_app(Guess, GuessAction, GuessObservation, max_concurrent_envs=16)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__" and sys.argv[1:] == ["toy"]:
    _serve_toy()
