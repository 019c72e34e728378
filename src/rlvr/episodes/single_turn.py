"""`single_turn`: the episode contract's trivial case, one prompt and one answer.

The first messages are the task's prompt (its text as one user message, or its chat
messages); the model's one turn ends the episode with no reward of the environment's
own, so the verifier pool grades the answer in batch as for any single-turn run
(rlvr.training.loop). A run on this environment samples exactly what rlvr sampled before
episodes existed: the same prompts, the same seeds, one `generate_ids` call per draw.
"""

from __future__ import annotations

from typing import Any

from rlvr.data.records import TaskRecord
from rlvr.episodes.base import EpisodeLimits, Message, Reply, ToolSpec


class SingleTurn:
    """One turn, graded by the verifier (`Reply(done=True, reward=None)`)."""

    tools: tuple[ToolSpec, ...] = ()
    runs_inline = True  # its calls cannot block: the runner calls them without a thread

    def __init__(self, limits: EpisodeLimits) -> None:
        self.limits = limits

    def reset(self, task: TaskRecord) -> list[Message]:
        if isinstance(task.prompt, str):
            return [{"role": "user", "content": task.prompt}]
        return [dict(m) for m in task.prompt]

    def step(self, turn: str) -> Reply:
        return Reply(done=True, reward=None)

    def close(self) -> None:
        pass


def single_turn(record: TaskRecord, options: dict[str, Any],
                limits: EpisodeLimits) -> SingleTurn:
    """The registry's factory (name -> factory(record, options, limits)); it takes no
    options, which the registry checks when the config loads."""
    return SingleTurn(limits)
