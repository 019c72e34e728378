"""rlvr's tasks, environments and verifiers served as an OpenEnv environment (the
`openenv` extra: openenv-core's own server classes), so that any OpenEnv client can
train on them: TRL's GRPOTrainer through its `rollout_func`, one session per rollout
(tests/test_ecosystem_openenv_trl.py).

One WebSocket session is one episode: `reset(seed=..., task_id=...)` picks a task from
the operator's records (by id, else by seed, else at random) and answers its first
messages; each `step({"message": text})` is one model turn, answered with the
environment's observation, reward and done. The environment is the operator's choice
(`make_env`, an rlvr Environment factory; default: one turn, graded by the record's
verifier). When an episode ends without a reward (done, or out of turns), the final
turn is graded by the record's verifier in rlvr's verifier pool (time-limited, in
worker processes), as `rlvr train` grades episodes.

A client chooses a task among the operator's records, never code, a verifier or a path.
The network side (bind, token, Host check) is rlvr.environments.ecosystem.openenv_http.
"""

from __future__ import annotations

import random
import threading
from typing import Any, Callable, Sequence
from uuid import uuid4

from openenv.core.env_server.interfaces import Environment as OpenEnvEnvironment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from rlvr.data.records import TaskRecord, prompt_text
from rlvr.episodes.base import Environment, EpisodeLimits, Message, Reply
from rlvr.verifiers.pool import Case, VerifierPool


class RlvrAction(Action):
    """One model turn: its text (special tokens dropped)."""

    message: str = Field(..., description="the model's turn")


class RlvrObservation(Observation):
    """prompt: the new messages as text (what a text-only client shows the model);
    messages: the same as chat messages; task_id: the record's id; info: the
    environment's extras (verdict reason, per-turn details)."""

    prompt: str = Field(default="")
    messages: list[dict[str, Any]] = Field(default_factory=list)
    task_id: str = Field(default="")
    info: dict[str, Any] = Field(default_factory=dict)


class SingleTurn:
    """The default environment: the record's prompt, one answer, graded by its verifier
    (reward None: the server grades it)."""

    tools = ()

    def __init__(self, limits: EpisodeLimits) -> None:
        self.limits = limits

    def reset(self, task: TaskRecord) -> list[Message]:
        prompt = task.prompt
        return list(prompt) if isinstance(prompt, list) else [{"role": "user", "content": prompt}]

    def step(self, turn: str) -> Reply:
        return Reply([], None, True)

    def close(self) -> None:
        pass


class Grader:
    """The record's verifier on a final turn, in a verifier pool shared by all sessions
    (its calls are serialised: the pool is not thread-safe)."""

    def __init__(self, workers: int = 1) -> None:
        self._pool = VerifierPool(workers=workers)
        self._lock = threading.Lock()

    def __call__(self, record: TaskRecord, completion: str) -> tuple[float, dict[str, Any]]:
        case = Case(record.verifier, completion, record.reference, dict(record.options),
                    prompt=prompt_text(record))
        with self._lock:
            verdict = self._pool.verify([case])[0]
        return float(verdict.score), {"verdict": verdict.to_dict()}

    def close(self) -> None:
        self._pool.close()


class TaskBook:
    """What every session shares: the operator's records, the environment factory, the
    episode limits and the grader."""

    def __init__(self, records: Sequence[TaskRecord],
                 make_env: Callable[[TaskRecord], Environment] | None = None,
                 limits: EpisodeLimits = EpisodeLimits(),
                 grade: Callable[[TaskRecord, str], tuple[float, dict[str, Any]]] | None = None
                 ) -> None:
        if not records:
            raise ValueError("the OpenEnv server needs at least one task record")
        self.records = list(records)
        self.by_id = {r.id: r for r in self.records}
        self.limits = limits
        self.make_env = make_env or (lambda record: SingleTurn(limits))
        self.grade = grade or Grader()

    def pick(self, seed: int | None, task_id: str | None) -> TaskRecord:
        if task_id is not None:
            if task_id not in self.by_id:
                raise ValueError(f"unknown task_id {str(task_id)[:200]!r}")
            return self.by_id[task_id]
        if seed is not None:
            return self.records[seed % len(self.records)]
        return random.choice(self.records)


def _as_text(messages: list[Message]) -> str:
    return "\n\n".join(str(m.get("content", "")) for m in messages)


class ServedEpisode(OpenEnvEnvironment):
    """One session's episode: an rlvr Environment behind OpenEnv's reset/step/state."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # every session has its own rlvr environment

    def __init__(self, book: TaskBook) -> None:
        super().__init__()
        self.book = book
        self._env: Environment | None = None
        self._record: TaskRecord | None = None
        self._turns = 0
        self._state = State(episode_id=str(uuid4()), step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None,
              task_id: str | None = None, **kwargs: Any) -> RlvrObservation:
        self.close()
        self._record = self.book.pick(seed, task_id)
        self._env, self._turns = self.book.make_env(self._record), 0
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        messages = self._env.reset(self._record)
        return RlvrObservation(prompt=_as_text(messages), messages=messages,
                               task_id=self._record.id, done=False, reward=None)

    def step(self, action: RlvrAction, timeout_s: float | None = None,
             **kwargs: Any) -> RlvrObservation:
        if self._env is None or self._record is None:
            raise RuntimeError("step before reset: call reset first")
        self._turns += 1
        self._state.step_count = self._turns
        reply = self._env.step(action.message)
        done = reply.done or self._turns >= self._env.limits.max_turns
        reward, info = reply.reward, dict(reply.info)
        if done and reward is None:  # the final answer is the verifier's to grade
            reward, verdict = self.book.grade(self._record, action.message)
            info.update(verdict)
        observation = [] if done else list(reply.observation)
        result = RlvrObservation(prompt=_as_text(observation), messages=observation,
                                 task_id=self._record.id, info=info, done=done,
                                 reward=reward)
        if done:
            self.close()
        return result

    @property
    def state(self) -> State:
        return self._state

    def close(self) -> None:
        env, self._env = self._env, None
        if env is not None:
            env.close()


def build_app(book: TaskBook, max_sessions: int = 64) -> Any:
    """The OpenEnv FastAPI app (openenv-core's create_fastapi_app: /ws sessions, /reset,
    /step, /state, /schema, /health) serving `book`; no web UI."""
    from openenv.core.env_server.http_server import create_fastapi_app

    return create_fastapi_app(lambda: ServedEpisode(book), RlvrAction, RlvrObservation,
                              max_concurrent_envs=max_sessions)
