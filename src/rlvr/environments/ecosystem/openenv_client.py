"""`openenv`: an episode played against any OpenEnv environment server (the `openenv`
extra: openenv-core's own WebSocket client, one session per episode).

    episodes:
      environment: openenv
      options: {url: "http://127.0.0.1:8010", action_field: message,
                observation_field: prompt, token_env: MY_ENV_TOKEN}

Only the operator's config names the server (`url`) and where its token is read from
(`token_env`, the name of an environment variable): a dataset row never does. The task
reaches the server as a seed derived from the record's id, so the G episodes of a group
play the same task when the server draws its task from the seed (rlvr's own OpenEnv
server does). The model's turn is sent as `{action_field: text}`; the observation comes
back as the next user message (`observation_field`, or the whole observation as JSON);
the server's reward and done are the turn's. A done turn with no reward leaves grading
to the record's verifier on the final answer, as for every episode.

A server that cannot be reached, or that drops the connection, is not one episode's
fault: `RemoteEnvironmentGone` (an ExternalFault) stops the run with exit 3, the URL
named, and the run resumes from its last checkpoint once the server is back.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

from rlvr.data.records import TaskRecord, prompt_text
from rlvr.environments.ecosystem.optional import require
from rlvr.episodes.base import EpisodeLimits, Message, Reply, ToolSpec
from rlvr.errors import ExternalFault, UserError

NAME = "openenv"
MAX_OBSERVATION_CHARS = 20_000  # what one observation may add to the context


class RemoteEnvironmentGone(ExternalFault, ConnectionError):
    """The OpenEnv server cannot be reached or dropped the session; the message names
    its URL. The run stops (exit 3) and resumes from its last checkpoint."""


class OpenEnvOptionError(UserError, ValueError):
    """An `episodes.options` value the openenv environment refuses (the field named)."""


@dataclass(frozen=True)
class OpenEnvOptions:
    """url:               the server (http://, https://, ws:// or wss://host:port).
    action_field:      the action field that carries the model's turn text.
    observation_field: the observation field shown to the model ("" = all of it, JSON).
    token_env:         an environment variable holding the server's bearer token.
    seed_from_task:    reset(seed=...) from the record's id (a group shares its task).
    include_prompt:    the record's own prompt opens the episode, before the server's
                       first observation (off when the server supplies the task)."""

    url: str = ""
    action_field: str = "message"
    observation_field: str = ""
    token_env: str = ""
    seed_from_task: bool = True
    include_prompt: bool = True

    def __post_init__(self) -> None:
        # ValueError messages start with the field's name (the registry's option reader
        # turns them into "episodes.options.<field>: ...")
        url = urlsplit(self.url)
        if url.scheme not in ("http", "https", "ws", "wss") or not url.hostname:
            raise ValueError(f"url: the OpenEnv server's address is required "
                             f"(http://host:port), got {self.url!r}")
        if not self.action_field:
            raise ValueError("action_field: must name a field of the server's action")


def parse_options(options: Mapping[str, Any] | None) -> OpenEnvOptions:
    """The operator's options checked (and the token variable set); OpenEnvOptionError
    names the field."""
    options = dict(options or {})
    declared = {f.name: f.type for f in fields(OpenEnvOptions)}
    for name, value in options.items():
        if name not in declared:
            raise OpenEnvOptionError(f"episodes.options.{name}: environment 'openenv' has no "
                                     f"such option (it takes: {', '.join(declared)})")
        kind = bool if declared[name] in (bool, "bool") else str
        if not isinstance(value, kind):
            raise OpenEnvOptionError(f"episodes.options.{name}: expected {kind.__name__}, "
                                     f"got {value!r}")
    try:
        parsed = OpenEnvOptions(**options)
    except ValueError as exc:
        field_name, _, message = str(exc).partition(" ")
        raise OpenEnvOptionError(f"episodes.options.{field_name.rstrip(':')}: {message}"
                                 ) from None
    _token(parsed)  # an unset token variable is a config error, not an episode's
    return parsed


def task_seed(record: TaskRecord) -> int:
    """A seed every episode of `record` shares (stable across runs and machines)."""
    return int.from_bytes(hashlib.sha256(record.id.encode()).digest()[:4], "big")


def _token(options: OpenEnvOptions) -> str:
    import os

    if not options.token_env:
        return ""
    token = os.environ.get(options.token_env, "")
    if not token:
        raise OpenEnvOptionError(f"episodes.options.token_env: ${options.token_env} is "
                                 "unset or empty")
    return token


def make_client(url: str, token: str, message_timeout_s: float) -> Any:
    """openenv-core's GenericEnvClient (sync wrapper) that sends `Authorization: Bearer`
    when a token is set (the stock client sends no headers)."""
    core = require("openenv.core", "openenv", "the openenv environment")
    from websockets.asyncio.client import connect as ws_connect

    class _Client(core.GenericEnvClient):
        async def connect(self) -> Any:
            if self._ws is None:
                headers = {"Authorization": f"Bearer {token}"} if token else None
                try:
                    self._ws = await ws_connect(self._ws_url, open_timeout=self._connect_timeout,
                                                max_size=self._max_message_size,
                                                additional_headers=headers, proxy=None)
                except Exception as exc:  # noqa: BLE001 - any failure to connect is one
                    raise ConnectionError(f"cannot connect to {self._ws_url}: {exc}") from exc
            return self

    return _Client(base_url=url, message_timeout_s=message_timeout_s).sync()


class OpenEnvEnvironment:
    """One episode against an OpenEnv server (one WebSocket session)."""

    tools: tuple[ToolSpec, ...] = ()

    def __init__(self, options: OpenEnvOptions, limits: EpisodeLimits,
                 client_factory: Callable[..., Any] = make_client) -> None:
        self.options, self.limits = options, limits
        self._client_factory = client_factory
        self._client: Any = None

    def reset(self, task: TaskRecord) -> list[Message]:
        # past the runner's own deadline, so a call it abandoned still ends
        self._client = self._client_factory(self.options.url, _token(self.options),
                                            self.limits.step_timeout_s + 5.0)
        kwargs = {"seed": task_seed(task)} if self.options.seed_from_task else {}
        result = self._call(lambda: self._client.reset(**kwargs))
        parts = [prompt_text(task)] if self.options.include_prompt else []
        parts.append(self._observation_text(result.observation))
        return [{"role": "user", "content": "\n\n".join(p for p in parts if p)}]

    def step(self, turn: str) -> Reply:
        result = self._call(lambda: self._client.step({self.options.action_field: turn}))
        reward = None if result.reward is None else float(result.reward)
        done = bool(result.done)
        observation = [] if done else [{"role": "user",
                                        "content": self._observation_text(result.observation)}]
        return Reply(observation, reward, done, {"openenv_reward": reward})

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - the session is over either way
                pass

    def _call(self, call: Callable[[], Any]) -> Any:
        """`call()`; a lost server (not an error it reports) is RemoteEnvironmentGone."""
        from websockets.exceptions import ConnectionClosed

        try:
            return call()
        except (ConnectionError, ConnectionClosed, OSError) as exc:
            raise RemoteEnvironmentGone(
                f"the OpenEnv server at {self.options.url} is gone ({type(exc).__name__}: "
                f"{exc}); start it again, then resume the run") from None

    def _observation_text(self, observation: Any) -> str:
        if not isinstance(observation, dict):
            raise ValueError(f"the OpenEnv observation is not an object: {observation!r:.200}")
        field_name = self.options.observation_field
        if field_name:
            text = observation.get(field_name)
            if not isinstance(text, str):
                raise ValueError(f"the OpenEnv observation has no text field {field_name!r} "
                                 f"(fields: {', '.join(observation)})")
        else:
            text = json.dumps(observation, sort_keys=True, ensure_ascii=False)
        return text[:MAX_OBSERVATION_CHARS]


def make(record: TaskRecord, options: dict[str, Any], limits: EpisodeLimits) -> OpenEnvEnvironment:
    """The registry's factory: one environment (one server session) per episode."""
    del record  # the task reaches the server through reset(), not the constructor
    return OpenEnvEnvironment(parse_options(options), limits)
