"""`guess_number`: find a hidden integer from "higher" / "lower" hints.

The task record's reference is the hidden integer (rlvr.data.guess_number generates such
records, with the range in the prompt). Each model turn names a number (its last
integer counts); the environment answers "higher" or "lower" as the next user turn, and
the episode ends when the guess is right (reward 1, less `turn_cost` per turn after the
first, floored at 0) or when the turns run out (reward 0). A turn with no integer gets a
reminder and costs its turn. Small enough for the embedded demo model to learn in minutes:
a guess that ignores the hints wastes turns, one that halves the range never runs out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rlvr.data.records import TaskRecord
from rlvr.environments.options import check_turn_cost, outcome_reward, parse_options
from rlvr.environments.text import first_messages
from rlvr.episodes.base import EpisodeLimits, Message, Reply, ToolSpec

NAME = "guess_number"
_INTEGER = re.compile(r"[-+]?\d+")
HIGHER, LOWER = "higher", "lower"
NO_NUMBER = "Answer with one integer: your guess."


@dataclass(frozen=True)
class GuessNumberOptions:
    """turn_cost: subtracted from a right guess's reward for each turn before it."""

    turn_cost: float = 0.0

    def __post_init__(self) -> None:
        check_turn_cost(self.turn_cost)


def hidden_number(record: TaskRecord) -> int:
    """The record's reference as the hidden integer; ValueError naming the record."""
    value = record.reference
    if isinstance(value, str) and re.fullmatch(r"\s*[-+]?\d+\s*", value):
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ValueError(f"{NAME}: record {record.id!r}: the reference must be an integer, "
                     f"got {value!r}")


def read_guess(turn: str) -> int | None:
    """The last integer the turn states, or None."""
    found = _INTEGER.findall(turn)
    return int(found[-1]) if found else None


@dataclass
class GuessNumber:
    """One episode (see the module docstring)."""

    limits: EpisodeLimits
    options: GuessNumberOptions = field(default_factory=GuessNumberOptions)
    tools: tuple[ToolSpec, ...] = ()
    _secret: int | None = None
    _turns: int = 0

    def reset(self, task: TaskRecord) -> list[Message]:
        self._secret, self._turns = hidden_number(task), 0
        return first_messages(task)

    def step(self, turn: str) -> Reply:
        if self._secret is None:
            raise RuntimeError(f"{NAME}: step() before reset()")
        self._turns += 1
        guess = read_guess(turn)
        info: dict[str, Any] = {"guess": guess, "turn": self._turns}
        if guess == self._secret:
            reward = outcome_reward(True, self._turns, self.options.turn_cost)
            return Reply([], reward, True, {**info, "solved": True})
        if self._turns >= self.limits.max_turns:
            return Reply([], 0.0, True, {**info, "solved": False})
        hint = NO_NUMBER if guess is None else (HIGHER if self._secret > guess else LOWER)
        return Reply([{"role": "user", "content": hint}], None, False, info)

    def close(self) -> None:
        self._secret = None


def make(record: TaskRecord, options: dict[str, Any], limits: EpisodeLimits) -> GuessNumber:
    """The registry's factory: a fresh episode for `record`."""
    return GuessNumber(limits, parse_options(GuessNumberOptions, options, NAME))
