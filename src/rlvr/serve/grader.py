"""The grading side of `rlvr serve`: admitted items wait in one FIFO queue; one thread
per worker takes the next item and grades it through its own single-worker
`VerifierPool`, so the pool's guarantees hold unchanged (a fresh worker process per
crash, SIGKILL at the item's time limit, a memory cap) and a slow item holds up only
the worker it is on, never the batch around it.

Admission is counted in items, not requests: `try_admit` refuses once `max_items`
admitted items are not yet graded, which bounds both memory and the wait a new request
would face. The event loop never blocks: it only enqueues and awaits futures that the
threads resolve with `call_soon_threadsafe`.

The grader also holds the operator's policy for requests (its settings' plugins,
verifier options and time limit; rlvr.verifiers.untrusted): requests are parsed under it
(app.py passes it to rlvr.serve.requests) and every worker gets the operator's plugins.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Sequence

from rlvr.serve.settings import ServeSettings
from rlvr.verifiers.base import Verdict
from rlvr.verifiers.pool import Case, VerifierPool
from rlvr.verifiers.untrusted import OperatorPolicy


@dataclass
class Job:
    """One admitted item. `abandoned` is set when its request gave up (deadline): a
    thread that takes it then skips the grading."""

    case: Case
    future: asyncio.Future
    abandoned: bool = False
    queued_at: float = field(default_factory=time.monotonic)


class Grader:
    """The worker pools, their threads and the admission count."""

    def __init__(self, settings: ServeSettings) -> None:
        self.settings = settings
        self._pools = [VerifierPool(workers=1, timeout_s=settings.timeout_s,
                                    memory_mb=settings.memory_mb, preload=settings.preload,
                                    plugins=settings.plugins)
                       for _ in range(settings.workers)]
        # After the pools: they install the plugins the policy's names may refer to.
        self.policy = OperatorPolicy(settings.verifier_options, settings.timeout_s)
        self._queue: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._admitted = 0  # admitted items not yet graded or skipped
        self._busy = 0  # items a worker is grading now
        self._item_seconds: deque[float] = deque(maxlen=512)  # recent grading times
        self.graded = 0
        self.skipped = 0  # abandoned before a worker took them

    # -- life cycle ---------------------------------------------------------------------

    def start(self, timeout_s: float = 120.0) -> "Grader":
        """Start every worker process (in parallel) and the threads that feed them."""
        errors: list[BaseException] = []

        def start_one(pool: VerifierPool) -> None:
            try:
                pool.start(timeout_s)
            except BaseException as exc:  # reported below, in this thread
                errors.append(exc)

        starters = [threading.Thread(target=start_one, args=(p,)) for p in self._pools]
        for t in starters:
            t.start()
        for t in starters:
            t.join()
        if errors:
            self.close()
            raise RuntimeError(f"verifier workers did not start: {errors[0]}")
        for index, pool in enumerate(self._pools):
            thread = threading.Thread(target=self._work, args=(pool,), daemon=True,
                                      name=f"rlvr-serve-grader-{index}")
            thread.start()
            self._threads.append(thread)
        return self

    def close(self) -> None:
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join(timeout=10)
        self._threads = []
        for pool in self._pools:
            pool.close()

    # -- admission ----------------------------------------------------------------------

    def try_admit(self, n: int) -> bool:
        """Reserve room for `n` items; False when that would pass `max_items`."""
        with self._lock:
            if self._admitted + n > self.settings.max_items:
                return False
            self._admitted += n
            return True

    def submit(self, cases: Sequence[Case], loop: asyncio.AbstractEventLoop) -> list[Job]:
        """Queue already admitted `cases`; each job's future gets its Verdict."""
        jobs = [Job(case, loop.create_future()) for case in cases]
        for job in jobs:
            self._queue.put(job)
        return jobs

    # -- the threads --------------------------------------------------------------------

    def _work(self, pool: VerifierPool) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            if job.abandoned:
                self._release(graded=False)
                continue
            with self._lock:
                self._busy += 1
            start = time.monotonic()
            try:
                verdict = pool.verify([job.case])[0]
            except Exception as exc:  # the pool itself failed (workers die at start-up)
                verdict = Verdict.error(f"verifier pool failure: {exc}")
            self._item_seconds.append(time.monotonic() - start)
            with self._lock:
                self._busy -= 1
            self._release(graded=True)
            _resolve(job.future, verdict)

    def _release(self, graded: bool) -> None:
        with self._lock:
            self._admitted -= 1
            if graded:
                self.graded += 1
            else:
                self.skipped += 1

    # -- for /metrics and Retry-After -----------------------------------------------------

    def load(self) -> dict[str, int]:
        with self._lock:
            return {"admitted": self._admitted, "busy": self._busy,
                    "queued": self._admitted - self._busy, "max_items": self.settings.max_items,
                    "workers": len(self._pools),
                    "restarts": sum(p.restarts for p in self._pools)}

    def retry_after_s(self) -> int:
        """A guess at when room frees up: the queue ahead at the recent grading rate,
        clamped to 1..30 s (the client retries anyway)."""
        recent = list(self._item_seconds)
        mean_s = sum(recent) / len(recent) if recent else 0.05
        with self._lock:
            waiting = self._admitted
        seconds = waiting * mean_s / max(1, len(self._pools))
        return int(min(30, max(1, round(seconds))))


def _resolve(future: asyncio.Future, verdict: Verdict) -> None:
    def set_result() -> None:
        if not future.done():  # the request may have stopped waiting (deadline)
            future.set_result(verdict)

    try:
        future.get_loop().call_soon_threadsafe(set_result)
    except RuntimeError:  # the event loop is gone: the server is shutting down
        pass
