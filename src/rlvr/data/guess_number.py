"""Records for the `guess_number` environment (rlvr.environments.guess_number): a hidden
integer drawn from [lo, hi] by a seeded generator, the range stated in the prompt.

Every record of one task has the same prompt (the number is hidden), so a policy cannot
learn an answer per prompt: only the search, from the environment's hints. The
reference is the number as text, which the `exact` verifier also accepts (the
environment grades the episode itself; the verifier grades a one-turn evaluation).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from rlvr.data.records import TaskRecord

Split = Literal["train", "test"]
TEMPLATE = ("I am thinking of an integer from {lo} to {hi}. Guess it: reply with one "
            "number. After each wrong guess I will say whether my number is higher or "
            "lower.")


@dataclass(frozen=True)
class GuessNumberTask:
    """lo, hi: the range (both included); template: prompt text with fields {lo} {hi};
    verifier: the records' verifier name."""

    lo: int = 1
    hi: int = 8
    template: str = TEMPLATE
    verifier: str = "exact"

    def __post_init__(self) -> None:
        if not self.lo < self.hi:
            raise ValueError(f"need lo < hi, got lo={self.lo} hi={self.hi}")

    def make(self, number: int, record_id: str) -> TaskRecord:
        if not self.lo <= number <= self.hi:
            raise ValueError(f"{number} is outside [{self.lo}, {self.hi}]")
        return TaskRecord(prompt=self.template.format(lo=self.lo, hi=self.hi),
                          reference=str(number), verifier=self.verifier, id=record_id,
                          metadata={"lo": self.lo, "hi": self.hi})

    def generate(self, n: int, split: Split = "train", seed: int = 0) -> list[TaskRecord]:
        """`n` records, each number uniform in [lo, hi], reproducible from (seed, split);
        the two splits draw from differently seeded generators."""
        rng = random.Random(f"guess_number:{seed}:{split}")
        return [self.make(rng.randint(self.lo, self.hi), f"guess:{split}:{seed}:{index}")
                for index in range(n)]
