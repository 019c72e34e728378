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

import sys
from pathlib import Path

import serve_helpers

TESTS = Path(__file__).resolve().parent


class Server(serve_helpers.Server):
    """A running server (serve_helpers.Server's start and stop); `url` is
    http://127.0.0.1:PORT."""

    def __init__(self, *argv: str, token: str = "") -> None:
        super().__init__(token=token, command=argv)

    def stop(self) -> int:
        code = super().stop()
        self.process.stdout.close()
        self.process.stderr.close()
        return code


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
