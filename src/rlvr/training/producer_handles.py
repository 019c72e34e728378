"""The trainer's view of its rollout producers (rollout.max_staleness = K >= 1): each
process with its own queues, and the waits on them that end in a ProducerError naming
the producer (its index, pid and steps) when it failed, exited or sent nothing in time.

With rollout.producers = N, producer i samples steps first + i, first + i + N, ...; the
groups of the whole run form one stream in step order (step s's draw at positions
(s - first) * P .. + P - 1), and `ProducerSet.receive` takes the stream's next group
from the queue of the producer whose step it is. So the trainer consumes groups in
exactly the order one producer would send them, stale groups dropped and replaced by
the stream's next ones as with one producer (rlvr.training.staleness).

Every wait looks at every producer: a producer that fails or exits stops the run at
once, whichever producer's groups the step is waiting for.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from rlvr.errors import ExternalFault
from rlvr.training.staleness import SampledGroup

POLL_S = 0.2  # how often a wait for groups checks that the producers are still alive


class ProducerError(ExternalFault, RuntimeError):
    """A rollout producer died, failed or sent nothing in time; the run is sound up to
    its last checkpoint (exit 3)."""


@dataclass
class Relay:
    """One producer's groups, moved from its process queue to an in-process one by a
    daemon thread; the trainer waits on the in-process one.

    Why: multiprocessing.Queue.get, once any byte of a message is in the pipe, reads
    the whole message with blocking reads. A producer killed while its feeder thread was
    writing a group larger than the pipe's buffer leaves half a message there, and the
    trainer holds the pipe's write end too, so no end of file ever comes: a get would
    block forever, timeout or not. Behind the relay only the relay's thread blocks on
    such a half message; the trainer's wait still times out and sees the producer gone.
    The in-process queue holds one group, so the producer's bounded queue still bounds
    how far ahead it runs."""

    def __init__(self, source: Any, name: str) -> None:
        self.source = source
        self.inbox: queue.Queue = queue.Queue(maxsize=1)
        self.closed = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.closed.is_set():
            try:
                item = self.source.get(timeout=POLL_S)
            except queue.Empty:
                continue
            except (EOFError, OSError, ValueError):  # the queue was closed: the run ends
                return
            except Exception as error:  # a message that cannot be read (unpickling)
                item = RelayFailure(error)
            while not self.closed.is_set():
                try:
                    self.inbox.put(item, timeout=POLL_S)
                    break
                except queue.Full:  # the trainer has not taken the one before yet
                    continue

    def get(self, timeout: float) -> Any:
        return self.inbox.get(timeout=timeout)

    def qsize(self) -> int:
        return self.inbox.qsize() + self.source.qsize()

    def close(self) -> None:
        self.closed.set()


@dataclass
class RelayFailure:
    """What the relay put in place of a message it could not read."""

    error: BaseException


@dataclass
class ProducerHandle:
    """One producer process and its queues; str() names it in errors."""

    index: int
    count: int       # rollout.producers
    first_step: int
    process: Any
    groups: Any      # its bounded queue of SampledGroup
    errors: Any      # its queue of tracebacks
    last_idle: float = 0.0  # its cumulative idle seconds, as its last trained group said
    relay: Relay | None = field(default=None, repr=False)  # started at the first wait

    def next_group(self, timeout: float) -> SampledGroup:
        """Its next group within `timeout` seconds (queue.Empty otherwise)."""
        if self.relay is None:
            self.relay = Relay(self.groups, f"rlvr-producer-{self.index}-relay")
        item = self.relay.get(timeout)
        if isinstance(item, RelayFailure):
            raise ProducerError(f"{self} sent a group the trainer cannot read: "
                                f"{item.error!r}") from item.error
        return item

    def pending(self) -> int:
        """Groups it has sent that the trainer has not taken."""
        return self.relay.qsize() if self.relay is not None else self.groups.qsize()

    def __str__(self) -> str:
        if self.count == 1:
            return f"the rollout producer (pid {self.process.pid})"
        steps = ", ".join(str(self.first_step + self.index + k * self.count) for k in range(3))
        return (f"rollout producer {self.index} of {self.count} (pid {self.process.pid}; "
                f"steps {steps}, ...)")

    def gone(self, step: int) -> ProducerError:
        return ProducerError(
            f"{self} exited with status {self.process.exitcode} while step {step} waited "
            "for groups; the groups it had sampled but the update had not trained are "
            "lost (a resume samples them again)")


class ProducerSet:
    """The producers, the stream position and the waits."""

    def __init__(self, handles: list[ProducerHandle], per_step: int, timeout_s: float) -> None:
        self.handles, self.per_step, self.timeout_s = handles, per_step, timeout_s
        self.taken = 0  # groups taken from the stream (trained or dropped)

    def receive(self, step: int) -> SampledGroup:
        """The stream's next group, from the producer whose draw it belongs to."""
        handle = self.handles[(self.taken // self.per_step) % len(self.handles)]
        group = self.wait(step, handle)
        self.taken += 1
        return group

    def wait(self, step: int, handle: ProducerHandle) -> SampledGroup:
        """`handle`'s next group; a ProducerError when any producer failed or exited, or
        `handle` sent nothing for rollout.producer_timeout_s."""
        began = time.perf_counter()
        while True:
            self.raise_failure(step)
            waited = time.perf_counter() - began
            try:
                return handle.next_group(max(0.0, min(POLL_S, self.timeout_s - waited)))
            except queue.Empty:
                pass
            for other in self.handles:
                if other is not handle and not other.process.is_alive():
                    raise other.gone(step)
            if not handle.process.is_alive():
                try:  # what it put before it went
                    return handle.next_group(POLL_S)
                except queue.Empty:
                    self.raise_failure(step)
                    raise handle.gone(step) from None
            if time.perf_counter() - began >= self.timeout_s:
                raise ProducerError(
                    f"step {step} waited {time.perf_counter() - began:.1f} s for {handle} "
                    f"and got no group (rollout.producer_timeout_s={self.timeout_s:g})")

    def raise_failure(self, step: int) -> None:
        """A ProducerError with the traceback the first failed producer sent, if any."""
        for handle in self.handles:
            try:
                trace = handle.errors.get_nowait()
            except queue.Empty:
                continue
            raise ProducerError(f"{handle} failed while step {step} waited for its "
                                f"groups:\n{trace.rstrip()}")

    def dead(self) -> ProducerHandle | None:
        """A producer that is no longer running, if any."""
        return next((h for h in self.handles if not h.process.is_alive()), None)

    def idle_since_last(self, kept: list[SampledGroup]) -> float:
        """The idle seconds the producers of `kept` accrued since their groups the trainer
        took before (each group carries its producer's running total): summed over
        producers."""
        latest = {g.producer: g.producer_idle_s for g in kept}  # the newest per producer
        idle = 0.0
        for index, total in latest.items():
            handle = self.handles[index]
            idle += total - handle.last_idle
            handle.last_idle = total
        return idle

    def depth(self) -> int:
        """Groups waiting in all the queues (-1 where the platform cannot count)."""
        try:
            return sum(h.pending() for h in self.handles)
        except NotImplementedError:  # macOS has no sem_getvalue
            return -1
