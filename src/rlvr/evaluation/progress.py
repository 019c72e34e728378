"""An evaluation's progress, on stderr.

On a terminal: a tqdm bar (prompt passes done, share passed so far, elapsed, ETA). In a
log (not a TTY): a start line, a line at most every `interval_s` seconds, and an end
line, so CI logs stay short.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Sequence, TextIO

from tqdm import tqdm


def bar_width(stream: TextIO) -> dict[str, Any]:
    """tqdm's size arguments: the terminal's, or a fixed 100 x 20 where it reports
    none (a copy of rlvr.runs.progress.bar_width: the import layers keep them apart)."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        columns = 0
    return {"dynamic_ncols": True} if columns else {"ncols": 100, "nrows": 20}


class Progress:
    """`tty` None: the stream decides. `leave` False clears the bar when done (the
    trainer's evaluations, whose result it prints itself)."""

    def __init__(self, label: str = "eval", stream: TextIO | None = None,
                 interval_s: float = 10.0, enabled: bool = True, tty: bool | None = None,
                 leave: bool = True) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.interval_s = interval_s
        self.tty = bool(getattr(self.stream, "isatty", bool)()) if tty is None else tty
        self.leave = leave
        self.bar: tqdm | None = None
        self.total_steps = self.generated_steps = self.graded_count = self.passed = 0
        self.started = self.last_line = 0.0

    @classmethod
    def silent(cls) -> "Progress":
        return cls(enabled=False)

    def start(self, records: int, greedy: bool, n: int) -> None:
        self.total_steps = records * (int(greedy) + (1 if n else 0))
        self.generated_steps = self.graded_count = self.passed = 0
        self.started = self.last_line = time.monotonic()
        if not self.enabled:
            return
        modes = "+".join(m for m, on in (("greedy", greedy), ("sample", n)) if on)
        if self.tty:
            self.bar = tqdm(total=self.total_steps, desc=f"{self.label} [{modes}]",
                            unit="prompt", file=self.stream, leave=self.leave,
                            **bar_width(self.stream))
        else:
            self._write(f"{self.label}: {self.total_steps} prompt passes ({modes})")

    def generated(self, mode: str, records: int) -> None:
        self.generated_steps += records
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.set_description(f"{self.label} [{mode}]", refresh=False)
            self.bar.set_postfix_str(self._share(), refresh=False)
            self.bar.update(records)
        elif time.monotonic() - self.last_line >= self.interval_s:
            self._write(self.line(mode))

    def graded(self, attempts: Sequence[object]) -> None:
        self.graded_count += len(attempts)
        self.passed += sum(bool(getattr(a, "verdict").passed) for a in attempts)

    def finish(self) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.set_postfix_str(self._share(), refresh=False)
            self.bar.close()
            self.bar = None
        else:
            self._write(self.line("done"))

    def line(self, mode: str) -> str:
        """A log line: passes done, passed so far, seconds, and the ETA while running."""
        elapsed = time.monotonic() - self.started
        line = (f"{self.label} [{mode}] {self.generated_steps}/{self.total_steps} prompt "
                f"passes, {self._share()}, {elapsed:.0f} s")
        left = self.total_steps - self.generated_steps
        if self.generated_steps and left > 0:
            line += f", ETA {elapsed / self.generated_steps * left:.0f} s"
        return line

    def _share(self) -> str:
        return f"{self.passed}/{self.graded_count} passed" if self.graded_count else "grading..."

    def _write(self, line: str) -> None:
        self.last_line = time.monotonic()
        self.stream.write(line + "\n")
        self.stream.flush()
