"""Run verifiers over a batch in worker processes, with a hard wall-clock limit per item.

Why processes and not threads or signals: a verifier parsing hostile model text (a LaTeX
tower `9^{9^{9^9}}`, a pathological regex) can spin inside C code where neither a Python
signal nor a thread can stop it. Only killing the process is certain. So each worker runs
one item at a time; the parent keeps the deadline and SIGKILLs a worker that passes it,
records a "timeout" verdict and starts a replacement. The batch always finishes, and the
calling process (the trainer) never parses model text itself.

Workers are fresh interpreters, never forks: the trainer holds torch thread pools, which
`fork` would copy in a broken state. Workers persist across batches, so their imports
(sympy, the sandbox) are paid once.
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Iterable, Protocol, Sequence

from rlvr.verifiers.base import InvalidReference, Verdict, run_verifier
from rlvr.verifiers.registry import add_plugins, get_verifier, plugins, spec_for


@dataclass(frozen=True)
class Case:
    """One item to check: which verifier (and its options), the completion, the reference."""

    verifier: str
    completion: str
    reference: Any
    options: dict[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None  # overrides the verifier's and the pool's default
    # The task as the model saw it (plain text), for verifiers that use it (see
    # `run_verifier`); None when unknown.
    prompt: str | None = None


class BatchVerifier(Protocol):
    """What trainers and evaluators use of a pool: `VerifierPool` (processes here) and
    `rlvr.verifiers.ray_pool.RayVerifierPool` (Ray actors) both provide it."""

    restarts: int

    def verify(self, cases: Sequence[Case]) -> list[Verdict]: ...

    def close(self) -> None: ...

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: object) -> None: ...


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)))


def worker_setup(preload: tuple[str, ...], plugin_paths: tuple[str, ...]) -> None:
    """What a fresh worker (process or Ray actor) does first: install the operator's
    plugins (it never saw the parent's `add_plugins`), then import its preloads. A plugin
    that fails to import here fails the start-up loudly; a broken preload does not."""
    add_plugins(plugin_paths)
    for name in preload:
        try:
            get_verifier(name)
        except Exception:  # a broken preload surfaces as per-item errors later
            pass


def _worker_main(conn: Connection, memory_mb: int | None, preload: tuple[str, ...],
                 plugin_paths: tuple[str, ...] = ()) -> None:
    # The parent handles Ctrl-C and shuts workers down; a worker must not die mid-item on it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if memory_mb:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    worker_setup(preload, plugin_paths)
    conn.send(("ready", None))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        conn.send(_check(*message))


def _check(name: str, options: dict[str, Any], completion: str, reference: Any,
           prompt: str | None = None) -> tuple[str, Any]:
    try:
        verdict = run_verifier(get_verifier(name, **options), completion, reference, prompt)
        if not isinstance(verdict, Verdict):
            return ("error", f"verifier {name!r} returned {type(verdict).__name__}, not Verdict")
        return ("ok", verdict.to_dict())
    except InvalidReference as exc:
        return ("invalid", str(exc)[:2000])
    except MemoryError:
        return ("error", "memory limit exceeded")
    except RecursionError:
        return ("error", "recursion limit exceeded")
    except Exception as exc:  # any verifier bug becomes a 0 for this item, never a dead batch
        return ("error", f"{type(exc).__name__}: {str(exc)[:500]}")


class _Worker:
    """One worker: a fresh `python -c` process talking over a socket pair.

    Not multiprocessing's "spawn": that re-imports the caller's __main__ in the child,
    which breaks scripts without a main guard and notebooks; a plain interpreter started
    on our own entry point imports nothing of the caller's but its sys.path.
    """

    def __init__(self, memory_mb: int | None, preload: tuple[str, ...],
                 plugin_paths: tuple[str, ...] = ()) -> None:
        parent_sock, child_sock = socket.socketpair()
        config = json.dumps({"fd": child_sock.fileno(), "memory_mb": memory_mb,
                             "preload": list(preload), "plugins": list(plugin_paths),
                             "sys_path": sys.path})
        self.process = subprocess.Popen(
            [sys.executable, "-c", "import sys, json; from rlvr.verifiers.pool import "
             "_worker_entry; _worker_entry(json.loads(sys.argv[1]))", config],
            pass_fds=(child_sock.fileno(),), stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
        child_sock.close()
        self.conn = Connection(parent_sock.detach())
        self.ready = False
        self.item: int | None = None
        self.deadline = 0.0

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.conn.close()


def _worker_entry(config: dict[str, Any]) -> None:
    sys.path[:0] = [p for p in config["sys_path"] if p not in sys.path]
    _worker_main(Connection(config["fd"]), config["memory_mb"], tuple(config["preload"]),
                 tuple(config.get("plugins", ())))


def operator_plugins(given: Iterable[str]) -> tuple[str, ...]:
    """A pool's plugin list: `given` (installed in this process now, so its own checks
    know them) and every plugin this process had installed already."""
    add_plugins(given)
    return plugins()


def item_limit(case: Case, pool_timeout_s: float | None) -> float:
    """The wall-clock limit of one item: its own, else the pool's, else its verifier's
    default (5 s for a name the registry does not know: the worker will name it)."""
    if case.timeout_s is not None:
        return case.timeout_s
    if pool_timeout_s is not None:
        return pool_timeout_s
    try:
        return spec_for(case.verifier).timeout_s
    except KeyError:
        return 5.0


class VerifierPool:
    """A pool of verifier worker processes; use as a context manager or call `close()`.

    workers:   processes (default: every core this process may use).
    timeout_s: per-item wall-clock limit for every case; None means each verifier's
               registered default (5 s for math), unless the case sets its own.
    memory_mb: address-space limit per worker; a memory bomb scores "error", not an OOM.
    preload:   verifier names each worker imports at start (so the first batch is not slow).
    plugins:   the operator's "module:Class" verifiers (rlvr.verifiers.registry), installed
               here and handed to every worker; the pool also knows every plugin this
               process installed before it was built.
    """

    def __init__(self, workers: int | None = None, timeout_s: float | None = None,
                 memory_mb: int | None = 4096, preload: Iterable[str] = (),
                 plugins: Iterable[str] = ()) -> None:
        self.n_workers = workers or default_workers()
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.preload = tuple(preload)
        self.plugins = operator_plugins(plugins)
        self._startup_failures = 0
        self._workers: list[_Worker] = []
        self.restarts = 0  # workers replaced after a timeout or crash (for metrics)

    def __enter__(self) -> "VerifierPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        while len(self._workers) < self.n_workers:
            self._workers.append(_Worker(self.memory_mb, self.preload, self.plugins))

    def start(self, timeout_s: float = 120.0) -> "VerifierPool":
        """Start every worker and wait until each has imported its preloads, so the first
        batch (or a benchmark) does not pay start-up. Optional: `verify` starts lazily."""
        self._start()
        deadline = time.monotonic() + timeout_s
        while not all(w.ready for w in self._workers):
            if time.monotonic() > deadline:
                raise RuntimeError(f"verifier workers not ready after {timeout_s:.0f} s")
            self._collect([], [])
        return self

    def _replace(self, worker: _Worker) -> _Worker:
        worker.kill()
        if not worker.ready:
            # Dying before "ready" is an environment problem (rlvr not importable, broken
            # preload), not a bad item: fail loudly instead of restarting forever.
            self._startup_failures += 1
            if self._startup_failures >= 3:
                self.close()
                raise RuntimeError("verifier worker processes die at start-up (exit code "
                                   f"{worker.process.returncode}); run `{sys.executable} -c "
                                   "'import rlvr.verifiers'` to see why")
        self.restarts += 1
        fresh = _Worker(self.memory_mb, self.preload, self.plugins)
        self._workers[self._workers.index(worker)] = fresh
        return fresh

    def _limit(self, case: Case) -> float:
        return item_limit(case, self.timeout_s)

    def verify(self, cases: Sequence[Case]) -> list[Verdict]:
        """Verdicts for `cases`, in order. Never raises for a bad item."""
        self._start()
        results: list[Verdict | None] = [None] * len(cases)
        self._resent: set[int] = set()
        pending = deque(range(len(cases)))
        while pending or any(w.item is not None for w in self._workers):
            self._dispatch(cases, pending, results)
            self._collect(cases, results)
        return [r if r is not None else Verdict.error("lost") for r in results]

    def _dispatch(self, cases: Sequence[Case], pending: deque[int],
                  results: list[Verdict | None]) -> None:
        for worker in list(self._workers):
            if not pending:
                return
            if not worker.ready or worker.item is not None:
                continue
            index = pending.popleft()
            case = cases[index]
            try:
                spec_for(case.verifier)
            except KeyError as exc:
                results[index] = Verdict.invalid(str(exc.args[0]))
                continue
            try:
                worker.conn.send((case.verifier, case.options, case.completion, case.reference,
                                  case.prompt))
            except (BrokenPipeError, OSError, ValueError, TypeError, AttributeError,
                    pickle.PicklingError) as exc:
                # A worker that died while idle gets the item again on a fresh process, once;
                # an unpicklable reference is an error for that item alone.
                self._replace(worker)
                if isinstance(exc, (BrokenPipeError, OSError)) and index not in self._resent:
                    self._resent.add(index)
                    pending.appendleft(index)
                else:
                    results[index] = Verdict.error(f"could not send item: {exc}")
                continue
            worker.item = index
            worker.deadline = time.monotonic() + self._limit(case)

    def _collect(self, cases: Sequence[Case], results: list[Verdict | None]) -> None:
        busy = [w for w in self._workers if w.item is not None]
        starting = [w for w in self._workers if not w.ready]
        now = time.monotonic()
        wait_s = min((w.deadline for w in busy), default=now + 1.0) - now
        handles: dict[Any, _Worker] = {}
        for w in busy + starting:
            handles[w.conn] = w
        ready = wait(list(handles), timeout=max(0.0, wait_s))
        for worker in {handles[h] for h in ready}:
            self._receive(worker, results)
        now = time.monotonic()
        for worker in [w for w in self._workers if w.item is not None and now >= w.deadline]:
            results[worker.item] = Verdict.timeout(self._limit(cases[worker.item]))
            self._replace(worker)

    def _receive(self, worker: _Worker, results: list[Verdict | None]) -> None:
        try:
            status, payload = worker.conn.recv()
        except (EOFError, OSError):  # the socket closed: the process died
            try:  # its socket closes a moment before it can be reaped: wait for the code
                code = worker.process.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                code = None
            if worker.item is not None:
                results[worker.item] = Verdict.error(f"verifier process died (exit code {code})")
            self._replace(worker)
            return
        if status == "ready":
            worker.ready = True
            return
        index, worker.item = worker.item, None
        if index is None:
            return
        if status == "ok":
            results[index] = Verdict.from_dict(payload)
        elif status == "invalid":
            results[index] = Verdict.invalid(payload)
        else:
            results[index] = Verdict.error(payload)

    def close(self) -> None:
        for worker in self._workers:
            try:
                worker.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        deadline = time.monotonic() + 2.0
        for worker in self._workers:
            try:
                worker.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            worker.kill()
        self._workers = []


def verify_batch(cases: Sequence[Case], workers: int | None = None,
                 timeout_s: float | None = None) -> list[Verdict]:
    """One-shot convenience: start a pool, check `cases`, shut it down."""
    with VerifierPool(workers=workers, timeout_s=timeout_s) as pool:
        return pool.verify(cases)
