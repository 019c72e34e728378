"""A one-line progress display for evaluation, on stderr.

On a terminal the line redraws in place; in a log (not a TTY) a line is written at
most every `interval_s` seconds, so CI logs stay short.
"""

from __future__ import annotations

import sys
import time
from typing import Sequence, TextIO


class Progress:
    def __init__(self, label: str = "eval", stream: TextIO | None = None,
                 interval_s: float = 10.0, enabled: bool = True) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.interval_s = interval_s
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.total_steps = 0
        self.generated_steps = 0
        self.graded_count = 0
        self.passed = 0
        self.started = self.last_draw = 0.0

    @classmethod
    def silent(cls) -> "Progress":
        return cls(enabled=False)

    def start(self, records: int, greedy: bool, n: int) -> None:
        self.total_steps = records * (int(greedy) + (1 if n else 0))
        self.started = time.monotonic()

    def generated(self, mode: str, records: int) -> None:
        self.generated_steps += records
        self._draw(mode)

    def graded(self, attempts: Sequence[object]) -> None:
        self.graded_count += len(attempts)
        self.passed += sum(bool(getattr(a, "verdict").passed) for a in attempts)

    def _draw(self, mode: str, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not (self.tty or force or now - self.last_draw >= self.interval_s):
            return
        self.last_draw = now
        share = f"{self.passed}/{self.graded_count} passed" if self.graded_count else "grading..."
        line = (f"{self.label} [{mode}] {self.generated_steps}/{self.total_steps} prompt passes, "
                f"{share}, {now - self.started:.0f} s")
        self.stream.write(("\r" + line + "\x1b[K") if self.tty else line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if not self.enabled:
            return
        self._draw("done", force=True)
        if self.tty:
            self.stream.write("\n")
        self.stream.flush()
