"""Verifier workers as Ray actors: `VerifierPool`'s interface and verdicts, spread over a
Ray cluster's CPU nodes (`reward.backend: ray`).

Same contract as the process pool (rlvr.verifiers.pool): one item in flight per actor,
the caller holds each item's deadline, an actor past it is killed (`ray.kill`) and its
item scores "timeout", an actor that dies (a crash, the OOM killer, a lost node) yields
"error" for its item, and a replacement actor starts; the batch always finishes. Each
actor runs the process pool's own `_check` on the item, so a verdict does not depend on
the backend. Items travel as plain pickles (as over the process pool's socket), so what
cannot cross a process boundary there cannot here either.

Ray is an optional extra (`pip install 'rlvr[ray]'`); this module imports it only when a
pool is built. Actors run with the driver's `sys.path` as PYTHONPATH (like the process
pool's workers) and install the operator's plugins (`plugins`) before their first item,
so on a cluster rlvr (and every plugin) must be importable on every node, at those
paths or installed.
"""

from __future__ import annotations

import os
import pickle
import resource
import sys
import time
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from rlvr.verifiers.base import Verdict
from rlvr.verifiers.pool import Case, _check, item_limit, operator_plugins, worker_setup
from rlvr.verifiers.registry import spec_for

STARTUP_TIMEOUT_S = 120.0


def ray_import_error() -> str | None:
    """Why `import ray` fails here (None: Ray is usable)."""
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


class _VerifierActor:
    """One verifier worker: imports its preloads once, then checks one item per call."""

    def __init__(self, memory_mb: int | None, preload: tuple[str, ...],
                 plugin_paths: tuple[str, ...] = ()) -> None:
        if memory_mb:
            # RLIMIT_DATA, not the process pool's RLIMIT_AS: a Ray worker maps the object
            # store (shared memory) into its address space, which RLIMIT_AS would count.
            # Private allocations (a memory bomb) are what RLIMIT_DATA limits.
            limit = memory_mb * 1024 * 1024
            try:
                resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
            except (ValueError, OSError):
                pass
        worker_setup(preload, plugin_paths)

    def ready(self) -> int:
        return os.getpid()

    def check(self, payload: bytes) -> tuple[str, Any]:
        try:
            args = pickle.loads(payload)
        except Exception as exc:  # e.g. a reference class this node cannot import
            return ("error", f"could not receive item: {type(exc).__name__}: {exc}"[:2000])
        return _check(*args)


@dataclass
class _Slot:
    """One actor and the item it holds."""

    actor: Any
    ready_ref: Any
    started: float
    ready: bool = False
    pid: int | None = None
    item: int | None = None
    ref: Any = None
    deadline: float = 0.0


class RayVerifierPool:
    """A pool of verifier Ray actors; use as a context manager or call `close()`.

    workers:   actors, one CPU each (default: the CPUs Ray reports available).
    timeout_s: per-item wall-clock limit; None means each verifier's registered default.
    memory_mb: private-memory limit per actor (RLIMIT_DATA); a memory bomb scores "error".
    preload:   verifier names each actor imports at start.
    plugins:   the operator's "module:Class" verifiers, handed to every actor.
    address:   the Ray cluster to join when this process has not called `ray.init`
               ("" = ray.init's default: RAY_ADDRESS, a `ray start` cluster on this
               machine, or a new local instance). A Ray already initialised here is used
               as it is; one this pool started is shut down by `close()`.
    """

    def __init__(self, workers: int | None = None, timeout_s: float | None = None,
                 memory_mb: int | None = 4096, preload: Iterable[str] = (),
                 address: str = "", plugins: Iterable[str] = ()) -> None:
        reason = ray_import_error()
        if reason is not None:
            raise ImportError("RayVerifierPool needs Ray: pip install 'rlvr[ray]' "
                              f"({reason})")
        self.n_workers = workers or 0  # resolved against the cluster on start
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.preload = tuple(preload)
        self.plugins = operator_plugins(plugins)
        self.address = address
        self.restarts = 0  # actors replaced after a timeout or crash (for metrics)
        self._startup_failures = 0
        self._slots: list[_Slot] = []
        self._owns_ray = False
        self._actor_class: Any = None

    def __enter__(self) -> "RayVerifierPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- start-up -------------------------------------------------------------------------

    def _connect(self) -> None:
        import ray

        if self._actor_class is not None:
            return
        if not ray.is_initialized():
            if self.address:
                ray.init(address=self.address)
            else:  # a new local Ray (unless RAY_ADDRESS or `ray start` points elsewhere)
                ray.init(include_dashboard=False)
            self._owns_ray = True
        if not self.n_workers:
            self.n_workers = max(1, int(ray.available_resources().get("CPU", 1)))
        # The driver's import path, as the process pool gives its workers: rlvr from this
        # checkout and "module:Class" verifiers resolve in the actor as they do here.
        path = os.pathsep.join(p for p in sys.path if p)
        self._actor_class = ray.remote(_VerifierActor).options(
            num_cpus=1, max_restarts=0, max_concurrency=1, scheduling_strategy="SPREAD",
            runtime_env={"env_vars": {"PYTHONPATH": path}})

    def _new_slot(self) -> _Slot:
        actor = self._actor_class.remote(self.memory_mb, self.preload, self.plugins)
        return _Slot(actor, actor.ready.remote(), time.monotonic())

    def _start(self) -> None:
        self._connect()
        while len(self._slots) < self.n_workers:
            self._slots.append(self._new_slot())

    def start(self, timeout_s: float = STARTUP_TIMEOUT_S) -> "RayVerifierPool":
        """Start every actor and wait until each has imported its preloads."""
        self._start()
        deadline = time.monotonic() + timeout_s
        while not all(s.ready for s in self._slots):
            if time.monotonic() > deadline:
                raise RuntimeError(self._not_ready_message(timeout_s))
            self._collect([], [])
        return self

    def _not_ready_message(self, waited_s: float) -> str:
        import ray

        cpus = ray.cluster_resources().get("CPU", 0)
        return (f"verifier actors not ready after {waited_s:.0f} s ({self.n_workers} actors of "
                f"1 CPU each on a Ray cluster of {cpus:g} CPUs); lower reward.workers or "
                "add CPU nodes")

    def _replace(self, slot: _Slot, failure: str = "") -> None:
        import ray

        try:
            ray.kill(slot.actor, no_restart=True)
        except Exception:  # already dead
            pass
        if not slot.ready:
            # Dying before "ready" is an environment problem (rlvr not importable on the
            # node, a broken preload), not a bad item: fail loudly instead of looping.
            self._startup_failures += 1
            if self._startup_failures >= 3:
                self.close()
                raise RuntimeError("verifier actors die at start-up; is rlvr importable on "
                                   f"the Ray nodes? Last failure: {failure[:1000]}")
        self.restarts += 1
        self._slots[self._slots.index(slot)] = self._new_slot()

    # -- batches ----------------------------------------------------------------------------

    def _limit(self, case: Case) -> float:
        return item_limit(case, self.timeout_s)

    def verify(self, cases: Sequence[Case]) -> list[Verdict]:
        """Verdicts for `cases`, in order. Never raises for a bad item."""
        self._start()
        results: list[Verdict | None] = [None] * len(cases)
        pending = list(range(len(cases)))
        pending.reverse()  # pop() from the end takes the first item
        while pending or any(s.item is not None for s in self._slots):
            self._dispatch(cases, pending, results)
            self._collect(cases, results)
        return [r if r is not None else Verdict.error("lost") for r in results]

    def _dispatch(self, cases: Sequence[Case], pending: list[int],
                  results: list[Verdict | None]) -> None:
        for slot in self._slots:
            while pending and slot.ready and slot.item is None:
                index = pending.pop()
                case = cases[index]
                try:
                    spec_for(case.verifier)
                except KeyError as exc:
                    results[index] = Verdict.invalid(str(exc.args[0]))
                    continue
                try:
                    payload = pickle.dumps((case.verifier, case.options, case.completion,
                                            case.reference, case.prompt))
                except Exception as exc:  # an unpicklable reference: an error for it alone
                    results[index] = Verdict.error(f"could not send item: {exc}")
                    continue
                slot.ref = slot.actor.check.remote(payload)
                slot.item = index
                slot.deadline = time.monotonic() + self._limit(case)

    def _collect(self, cases: Sequence[Case], results: list[Verdict | None]) -> None:
        import ray

        busy = [s for s in self._slots if s.item is not None]
        starting = [s for s in self._slots if not s.ready]
        owner = {s.ref: s for s in busy} | {s.ready_ref: s for s in starting}
        refs = [s.ref for s in busy] + [s.ready_ref for s in starting]
        now = time.monotonic()
        wait_s = max(0.0, min((s.deadline for s in busy), default=now + 1.0) - now)
        if refs:
            done, rest = ray.wait(refs, num_returns=1, timeout=wait_s)
            if done and rest:  # everything else already finished, without waiting again
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                done += more
            for ref in done:
                self._receive(owner[ref], ref, results)
        else:
            time.sleep(min(wait_s, 0.05))
        now = time.monotonic()
        for slot in [s for s in self._slots if s.item is not None and now >= s.deadline]:
            results[slot.item] = Verdict.timeout(self._limit(cases[slot.item]))
            self._replace(slot)
        for slot in [s for s in self._slots if not s.ready]:
            if now - slot.started > STARTUP_TIMEOUT_S:
                self.close()
                raise RuntimeError(self._not_ready_message(STARTUP_TIMEOUT_S))

    def _receive(self, slot: _Slot, ref: Any, results: list[Verdict | None]) -> None:
        import ray

        if not slot.ready:  # `ref` is its ready() call
            try:
                slot.pid = ray.get(ref)
            except ray.exceptions.RayError as exc:
                self._replace(slot, f"{type(exc).__name__}: {exc}")
                return
            slot.ready = True
            return
        index, slot.item, slot.ref = slot.item, None, None
        try:
            status, payload = ray.get(ref)
        except ray.exceptions.RayError as exc:  # the actor died (crash, kill, lost node)
            if index is not None:
                results[index] = Verdict.error(f"verifier actor died ({type(exc).__name__})")
            self._replace(slot)
            return
        if index is None:
            return
        if status == "ok":
            results[index] = Verdict.from_dict(payload)
        elif status == "invalid":
            results[index] = Verdict.invalid(payload)
        else:
            results[index] = Verdict.error(payload)

    def close(self) -> None:
        if self._actor_class is None:
            return
        import ray

        for slot in self._slots:
            try:
                ray.kill(slot.actor, no_restart=True)
            except Exception:
                pass
        self._slots = []
        self._actor_class = None
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False
