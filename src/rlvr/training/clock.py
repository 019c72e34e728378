"""The training clock: seconds spent on RL steps (generation, rewards, updates,
checkpoints), with the held-out evaluations paused out.

Learning curves and time budgets (`max_seconds`, `eval.every_s`) are read on this clock,
so a run that evaluates often is not charged for it, and two trainers compared at the
same marks spent the same time training. The seconds carry across a resume (the
checkpoint stores them).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator


class TrainingClock:
    def __init__(self, carried: float = 0.0) -> None:
        self.carried = carried  # seconds counted before the current stretch
        self.since: float | None = None  # perf_counter at the current stretch's start

    def start(self) -> "TrainingClock":
        self.since = time.perf_counter()
        return self

    def seconds(self) -> float:
        running = time.perf_counter() - self.since if self.since is not None else 0.0
        return self.carried + running

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Time inside the block is not counted (a clock not yet started stays stopped)."""
        running = self.since is not None
        self.carried, self.since = self.seconds(), None
        try:
            yield
        finally:
            if running:
                self.start()
