"""TrackerSet: the run's trackers behind one call per event.

Failures: a tracker that cannot start is an error (TrackerError, before any model is
built), since a run the user asked to track must not run untracked silently. A tracker
that fails later (a full disk, a lost server) is warned about once and dropped: the
step's numbers are already in the run directory, and hours of training are worth more
than a plot. finish() never raises for the same reason.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from rlvr.errors import ExternalFault
from rlvr.runs.trackers.base import RunInfo, Tracker, attempt_rows, finite_numbers


class TrackerError(ExternalFault, RuntimeError):
    """A tracker could not start (the message names the backend)."""


class TrackerSet:
    def __init__(self, trackers: Sequence[Tracker] = (), attempts_per_step: int = 0,
                 attempts_every: int = 1, warn: Callable[[str], None] = print) -> None:
        self.trackers = list(trackers)
        self.attempts_per_step, self.attempts_every = attempts_per_step, attempts_every
        self.warn = warn

    def start(self, info: RunInfo) -> "TrackerSet":
        started: list[Tracker] = []
        for tracker in self.trackers:
            try:
                tracker.start(info)
            except Exception as exc:
                for other in started:  # no half-open runs left behind
                    _quietly(other.finish, "failed")
                raise TrackerError(f"tracker {tracker.name} could not start: "
                                   f"{type(exc).__name__}: {exc}") from exc
            started.append(tracker)
        return self

    def log_step(self, step: int, metrics: dict[str, Any],
                 rollouts: Sequence[dict[str, Any]]) -> None:
        """One RL step: its numbers, and a sample of its attempts when due."""
        numbers = finite_numbers(metrics)
        due = self.attempts_per_step > 0 and step % self.attempts_every == 0
        rows = attempt_rows(rollouts, self.attempts_per_step) if due else []
        for tracker in list(self.trackers):
            self._call(tracker, tracker.log_metrics, step, numbers)
            if rows and tracker in self.trackers:
                self._call(tracker, tracker.log_attempts, step, rows)

    def log_evals(self, step: int, row: dict[str, Any]) -> None:
        """A held-out evaluation's line of evals.jsonl, its names under evals/."""
        numbers = finite_numbers(row, prefix="evals/")
        for tracker in list(self.trackers):
            self._call(tracker, tracker.log_evals, step, numbers)

    def finish(self, status: str = "finished") -> None:
        for tracker in self.trackers:
            try:
                tracker.finish(status)
            except Exception as exc:  # the run is over; its files hold everything
                self.warn(f"warning: tracker {tracker.name} did not close cleanly "
                          f"({type(exc).__name__}: {exc})")
        self.trackers = []

    def _call(self, tracker: Tracker, method: Callable[..., None], *args: Any) -> None:
        try:
            method(*args)
        except Exception as exc:
            self.trackers.remove(tracker)
            self.warn(f"warning: tracker {tracker.name} failed ({type(exc).__name__}: "
                      f"{exc}); training goes on without it (the run directory has "
                      "every record)")
            _quietly(tracker.finish, "failed")


def _quietly(method: Callable[..., None], *args: Any) -> None:
    try:
        method(*args)
    except Exception:  # closing a tracker that already failed: nothing more to say
        pass
