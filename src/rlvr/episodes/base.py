"""The episode contract: an agent (the policy) acting in an environment, turn by turn.

An environment starts from a task and returns the first messages; it then takes each of
the model's turns and answers with observation messages (a tool's result, feedback, the
next user turn), an optional reward and whether the episode is done. A single-turn task
is an episode of one turn whose environment grades the answer with a verifier and ends:
the trainer runs every task through this contract (one code path).

What the trainer gets back is a `Completion` (rlvr.rollout.base) whose `token_ids` hold
everything after the first prompt, the model's sampled tokens and the environment's
tokens interleaved, exactly as the model saw them (never re-tokenized from text), with
`loss_mask` saying which tokens the model sampled (1) and which the environment wrote
(0: context only, out of the loss, the KL, the entropy and the length statistics).

docs/contracts.md, "Episodes", is the reader's version of this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

Message = dict[str, Any]  # {"role": "user" | "tool" | "system" | "assistant", "content": str, ...}


@dataclass(frozen=True)
class ToolSpec:
    """A tool the model may call: a name, what it does, and a JSON schema of its
    arguments (the `parameters` object of the OpenAI / Hugging Face tool format)."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_json_schema(self) -> dict[str, Any]:
        """The tool as chat templates take it (`tokenizer.apply_chat_template(tools=...)`)."""
        return {"type": "function", "function": {"name": self.name,
                                                 "description": self.description,
                                                 "parameters": self.parameters}}


@dataclass(frozen=True)
class EpisodeLimits:
    """max_turns: model turns per episode; max_tokens: all tokens after the first prompt
    (the model's and the environment's); step_timeout_s: wall-clock seconds one
    environment call (reset or step) may take before the episode ends with score 0."""

    max_turns: int = 1
    max_tokens: int = 256
    step_timeout_s: float = 30.0


@dataclass(frozen=True)
class Reply:
    """What an environment answers to one model turn.

    observation: messages appended to the conversation before the model's next turn
                 (empty when done).
    reward:      this turn's reward, or None; the episode's reward is the final turn's
                 reward when done, plus any per-turn rewards the environment declares.
    done:        the episode is over.
    info:        extras carried into the attempt record (verdict details, tool errors).
    """

    observation: list[Message] = field(default_factory=list)
    reward: float | None = None
    done: bool = False
    info: dict[str, Any] = field(default_factory=dict)


class Environment(Protocol):
    """One episode's environment (a fresh instance per episode: no state is shared).

    tools:  the tools the model may call in this episode (may be empty).
    limits: turns, tokens and seconds.
    """

    tools: Sequence[ToolSpec]
    limits: EpisodeLimits

    def reset(self, task: Any) -> list[Message]:
        """The first messages of the episode for this task record."""
        ...

    def step(self, turn: str) -> Reply:
        """The model's turn (its text, special tokens dropped) -> the environment's reply."""
        ...

    def close(self) -> None:
        """Release what the episode held (a sandbox, a connection)."""
        ...
