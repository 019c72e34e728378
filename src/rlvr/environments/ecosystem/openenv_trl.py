"""rlvr's served tasks in the shape TRL's GRPOTrainer takes as `environment_factory`.

TRL (1.16 and later) runs each rollout against one instance of an environment class: it
calls `reset(**row)` with the dataset row before generating, exposes the instance's
public methods as tools the model may call, and hands the instances to every reward
function as `environments=`. `TrlTaskEnvironment` is such a class over rlvr's OpenEnv
server (`python -m rlvr.environments.ecosystem.openenv_http --data tasks.jsonl`): one
WebSocket session per rollout, reset to the row's task (`task_id`), graded by the
task's own verifier on the server. The model submits its answer with the
`submit_answer` tool; `rlvr_reward` is the reward function, which pays a submitted
answer's grade, and grades the completion's own final text for a rollout that
submitted none (a model that has not learnt to call tools is still graded, on what it
wrote, by the same verifier).

    from functools import partial
    trainer = GRPOTrainer(..., environment_factory=partial(TrlTaskEnvironment, url),
                          reward_funcs=[rlvr_reward])

The server's URL and token are the operator's (the constructor's); a data row only
names a task id, which the server refuses unless its own task file has it.
"""

from __future__ import annotations

import os
from typing import Any

from rlvr.environments.ecosystem.openenv_client import make_client


class TrlTaskEnvironment:
    """One rollout's session on rlvr's OpenEnv server (see the module docstring).
    token_env: an environment variable holding the server's bearer token."""

    def __init__(self, url: str, token_env: str = "", timeout_s: float = 30.0) -> None:
        self._url, self._timeout_s = url, timeout_s
        self._token = os.environ.get(token_env, "") if token_env else ""
        self._client: Any = None
        self.task_id: str | None = None
        self.reward: float | None = None  # the grade of the answer submitted, if any

    def reset(self, task_id: str | None = None, **row: Any) -> None:
        """Open a fresh session on the row's task (TRL reuses instances across batches).
        Returns None: the row's own prompt already states the task."""
        del row  # the prompt and other columns: the server holds the task itself
        self._close()
        self._client = make_client(self._url, self._token, self._timeout_s)
        self._client.reset(task_id=task_id)
        self.task_id, self.reward = task_id, None

    def submit_answer(self, answer: str) -> str:
        """Submit the final answer to the task for grading. Call it once, when sure.

        Args:
            answer: the final answer, in the form the task asks for.

        Returns:
            Whether the answer was accepted.
        """
        if self.reward is not None:
            return "An answer was already submitted for this task."
        self.reward = self._grade(answer)
        return "correct" if self.reward > 0 else "not correct"

    def _final_reward(self, text: str) -> float:
        """The reward of a rollout: its submitted answer's grade, else `text` graded.
        (Private: TRL offers every public method to the model as a tool.)"""
        if self.reward is None:
            self.reward = self._grade(text)
        return self.reward

    def _grade(self, text: str) -> float:
        if self._client is None:
            raise RuntimeError("grade before reset: TRL calls reset(**row) first")
        result = self._client.step({"message": text})
        return float(result.reward or 0.0)

    def _close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __del__(self) -> None:
        try:
            self._close()
        except Exception:  # noqa: BLE001 - a session at interpreter exit: nothing to do
            pass


def rlvr_reward(completions: list[Any], environments: list[TrlTaskEnvironment],
                **kwargs: Any) -> list[float]:
    """TRL reward function: each rollout's grade from its own environment (see
    TrlTaskEnvironment._final_reward); a conversational completion is graded on its
    last assistant message."""
    del kwargs
    return [env._final_reward(_final_text(completion))
            for completion, env in zip(completions, environments, strict=True)]


def _final_text(completion: Any) -> str:
    if isinstance(completion, str):
        return completion
    said = [m.get("content") or "" for m in completion if m.get("role") == "assistant"]
    return said[-1] if said else ""
