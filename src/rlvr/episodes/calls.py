"""Environment calls with a deadline, run side by side.

Each call runs in a daemon thread of its own, started together, so a turn's steps over
the whole batch overlap (a sandboxed test run, a tool) and one slow environment delays
the turn by at most its `step_timeout_s`. A call past its deadline is abandoned: Python
cannot stop a thread, so it runs on in the background holding its environment, and the
episode ends with "env_timeout". What a call raises becomes its outcome, and ends only
its episode; but an ExternalFault (rlvr.errors: a remote environment server that is
gone) is kept as `fault` and raised by `call_all` once every call has ended: it is not
the episode's fault, and every later episode would fail the same way, so the run stops
(the CLI's exit 3, naming what is gone and how to resume).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from rlvr.errors import ExternalFault


@dataclass
class Outcome:
    """value: what the call returned; error: "Type: message" when it raised; timed_out:
    still running at its deadline; seconds: how long it ran (the deadline when it did
    not end)."""

    value: Any = None
    error: str = ""
    timed_out: bool = False
    seconds: float = 0.0
    fault: ExternalFault | None = None


def call_all(calls: Sequence[Callable[[], Any]], timeouts: Sequence[float],
             inline: Sequence[bool] = ()) -> list[Outcome]:
    """Run every call at once; each gets `timeouts[i]` seconds from the common start.
    Calls marked `inline` (an environment that cannot block: `runs_inline = True`, such
    as single_turn) run here, one after another, without a thread or a deadline: a
    thread per trivial call would cost a step of 256 episodes some 0.1 s."""
    own = [Outcome() for _ in calls]  # each thread writes only its own
    done = [threading.Event() for _ in calls]
    here = list(inline) or [False] * len(calls)
    started = time.perf_counter()
    for i, call in enumerate(calls):
        if not here[i]:
            threading.Thread(target=_run, args=(call, own[i], done[i]), daemon=True,
                             name=f"rlvr-episode-env-{i}").start()
    for i, call in enumerate(calls):
        if here[i]:
            _run(call, own[i], done[i])
    outcomes = []
    for i, timeout in enumerate(timeouts):
        left = max(0.0, started + timeout - time.perf_counter())
        finished = here[i] or done[i].wait(left)
        outcomes.append(own[i] if finished else Outcome(timed_out=True, seconds=timeout))
    for outcome in outcomes:
        if outcome.fault is not None:
            raise outcome.fault
    return outcomes


def _run(call: Callable[[], Any], out: Outcome, finished: threading.Event) -> None:
    began = time.perf_counter()
    try:
        out.value = call()
    except ExternalFault as exc:  # something outside is gone: the run's fault, not this episode's
        out.fault = exc
        out.error = f"{type(exc).__name__}: {exc}"
    except BaseException as exc:  # noqa: BLE001 - an environment's fault is an outcome
        out.error = f"{type(exc).__name__}: {exc}"
    out.seconds = time.perf_counter() - began
    finished.set()
