"""The rollout producer's grading thread (rollout.max_staleness = K >= 1): each draw's
groups are graded as soon as their episodes are sampled, while the producer's main
thread samples the next draw and the trainer updates, and go on the trainer's queue with
their verdicts and scores.

Why a thread: grading is waiting (on the verifier pool's worker processes, Ray actors
or servers), so it overlaps the main thread's decoding in the same process without
taking its cores. The hf engine decodes a shard's groups in one batch (a draw is one
shard unless sampling.generation_shards > 1), so they are all sampled at the same
moment; each shard is handed over as soon as it is sampled and graded as one batch
(every pool worker busy) while the next shard samples, then put on the queue group by
group, in stream order. A hand-off of one shard bounds how far grading may fall behind
sampling: the main thread waits (producer idle) when the thread still grades the shard
before and another waits to be taken.

One thread uses the pool (the pools are not thread-safe); a failure is sent to the
trainer at once (the errors queue) and stops the producer at its next hand-off.
"""

from __future__ import annotations

import queue
import threading
import time
import traceback
from typing import Any, Callable, Sequence

from rlvr.data.records import TaskRecord
from rlvr.training.rewards import grade_episodes
from rlvr.training.staleness import SampledGroup

POLL_S = 0.1  # how often a blocked hand-off looks at the stop flag and the thread


class GradingFailed(RuntimeError):
    """The grading thread failed; its traceback is already on the errors queue."""


class DrawGrader:
    """grade_draw in a thread; each graded group goes to `put` in the order the draws
    were handed in."""

    def __init__(self, pool: Any, verifier: str, options: dict[str, Any],
                 put: Callable[[SampledGroup], None], stop: Any, errors: Any) -> None:
        self.pool, self.verifier, self.options = pool, verifier, options
        self.put, self.stop, self.errors = put, stop, errors
        self.inbox: queue.Queue = queue.Queue(maxsize=1)
        self.failed = threading.Event()
        self.thread = threading.Thread(target=self._run, name="rlvr-producer-grading",
                                       daemon=True)
        self.thread.start()

    def submit(self, records: Sequence[TaskRecord], groups: list[SampledGroup]) -> float:
        """Hand one draw's groups (ungraded; records [P] in the same order) to the thread;
        returns the seconds waited for room. GradingFailed when the thread failed."""
        began = time.perf_counter()
        while not self.stop.is_set():
            self._raise_failure()
            try:
                self.inbox.put((list(records), groups), timeout=POLL_S)
                break
            except queue.Full:
                continue
        return time.perf_counter() - began

    def close(self) -> None:
        """Let the thread finish the draws handed in (the producer is not stopping) or
        end at once (stop is set: what it grades then is lost, as the queue's groups)."""
        while self.thread.is_alive() and not self.stop.is_set():
            try:
                self.inbox.put(None, timeout=POLL_S)
                break
            except queue.Full:
                continue
        if not self.stop.is_set():
            self.thread.join()
        self._raise_failure()

    def _raise_failure(self) -> None:
        if self.failed.is_set():
            raise GradingFailed("the producer's grading thread failed (its traceback was "
                                "sent to the trainer)")

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                try:
                    draw = self.inbox.get(timeout=POLL_S)
                except queue.Empty:
                    continue
                if draw is None:
                    return
                for group in grade_draw(self.pool, *draw, self.verifier, self.options):
                    self.put(group)
        except BaseException:
            self.errors.put("the producer's grading thread failed:\n" + traceback.format_exc())
            self.failed.set()


def grade_draw(pool: Any, records: list[TaskRecord], groups: list[SampledGroup],
               verifier: str = "", options: dict[str, Any] | None = None
               ) -> list[SampledGroup]:
    """The draw's groups with verdicts, scores and verify_s (an equal share each of the
    batch's grading seconds), exactly as the trainer's grade_episodes grades them."""
    began = time.perf_counter()
    verdicts, scores = grade_episodes(pool, records, [g.episodes for g in groups],
                                      verifier, options)  # [P][G], [P, G]
    share = (time.perf_counter() - began) / max(1, len(groups))
    for group, verdict_row, score_row in zip(groups, verdicts, scores.tolist()):
        group.verdicts, group.scores, group.verify_s = verdict_row, score_row, share
    return groups
