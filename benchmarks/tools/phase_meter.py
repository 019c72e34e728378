"""Peak resident memory and time per labelled phase of one process (Linux).

How the peaks are exact, not sampled: the kernel keeps a high-water mark of the
process's RSS (VmHWM in /proc/self/status), and writing "5" to /proc/self/clear_refs
resets it to the current RSS. At every phase boundary the meter folds the mark into
every open phase and resets it, so each phase's peak is the true maximum RSS while it
ran, however briefly it was reached (a sampler would miss a peak inside one C call).
Child processes (verifier workers) are sampled by a background thread instead, every
`sample_s`: their marks cannot be reset from here.

At each boundary the meter also reads glibc's own accounting (mallinfo2): bytes the
program holds in malloc ("heap live") against the RSS. The gap is memory freed but kept
by the allocator (rlvr.training.memory.retain_freed_memory) plus non-malloc pages
(shared libraries, Python's own arenas, file mappings).
"""

from __future__ import annotations

import ctypes
import os
import re
import resource
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

MB = 2**20


def _status_kb(name: str, pid: int | str = "self") -> int:
    """A VmXXX field of /proc/<pid>/status in bytes (0 when the process is gone)."""
    try:
        text = open(f"/proc/{pid}/status", encoding="ascii").read()
    except OSError:
        return 0
    found = re.search(rf"^{name}:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) * 1024 if found else 0


def rss() -> int:
    return _status_kb("VmRSS")


def reset_peak() -> bool:
    """Reset this process's VmHWM to its current RSS; False where the kernel refuses."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def children() -> list[int]:
    """Pids of this process's direct children (scans /proc: no psutil needed)."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat", encoding="ascii").read()
        except OSError:
            continue
        # the command name may hold spaces: fields after its closing parenthesis
        if int(stat.rsplit(")", 1)[1].split()[1]) == me:
            found.append(int(entry))
    return found


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _mallinfo2():
    try:
        function = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):  # not glibc, or glibc < 2.33
        return None
    function.restype = _MallInfo2
    return function


_MALLINFO2 = _mallinfo2()


def heap() -> tuple[int, int]:
    """(bytes in use by malloc's callers, bytes free but held by malloc); (0, 0) when
    glibc's mallinfo2 is unavailable."""
    if _MALLINFO2 is None:
        return 0, 0
    info = _MALLINFO2()
    return info.uordblks + info.hblkhd, info.fordblks


def cpu_seconds() -> tuple[float, float]:
    """(user + system, system) CPU seconds of this process so far; system time is mostly
    the kernel handing out (zeroed) pages."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime, usage.ru_stime


def minor_faults() -> int:
    """Pages this process faulted in (fresh or reclaimed memory) so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


@dataclass
class Record:
    """One finished phase. Bytes throughout; `peak` is this process's alone."""
    label: str
    started: float     # perf_counter at entry (tables list phases in this order)
    seconds: float
    cpu: float         # user + system CPU seconds
    system: float      # system CPU seconds (page faults are most of it)
    before: int        # RSS at entry
    peak: int          # highest RSS while it ran
    after: int         # RSS at exit
    heap_live: int     # malloc bytes in use at exit
    heap_free: int     # malloc bytes free but held at exit
    children: int      # highest sampled RSS of all child processes together
    faults: int        # minor page faults while it ran (fresh pages from the kernel)

    @property
    def rise(self) -> int:
        return self.peak - self.before


@dataclass
class _Open:
    label: str
    began: float
    cpu: tuple[float, float]
    before: int
    peak: int
    faults: int
    children: int = 0


@dataclass
class PhaseMeter:
    """`with meter.phase("name"):` nests; labels join with "/" ("step/update/backward")."""
    sample_s: float = 0.05
    records: list[Record] = field(default_factory=list)  # in the order phases end
    children_peak: int = 0
    outside_peak: int = 0  # highest RSS seen while no phase was open

    def __post_init__(self) -> None:
        self._open: list[_Open] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.exact = reset_peak()
        self.start_rss = rss()

    def start(self) -> "PhaseMeter":
        self._thread = threading.Thread(target=self._sample, name="phase-meter", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self._fold()
        label = f"{self._open[-1].label}/{name}" if self._open else name
        now = rss()
        opened = _Open(label, time.perf_counter(), cpu_seconds(), now, now, minor_faults())
        with self._lock:
            self._open.append(opened)
        try:
            yield
        finally:
            self._fold()
            with self._lock:
                self._open.remove(opened)
            live, free = heap()
            cpu, system = cpu_seconds()
            self.records.append(Record(label, opened.began, time.perf_counter() - opened.began,
                                       cpu - opened.cpu[0], system - opened.cpu[1],
                                       opened.before,
                                       opened.peak, rss(), live, free, opened.children,
                                       minor_faults() - opened.faults))

    def _fold(self) -> None:
        """Give every open phase the high-water mark since the last boundary; reset it."""
        mark = _status_kb("VmHWM") if self.exact else rss()
        with self._lock:
            for opened in self._open:
                opened.peak = max(opened.peak, mark)
            if not self._open:
                self.outside_peak = max(self.outside_peak, mark)
        if self.exact:
            reset_peak()

    def _sample(self) -> None:
        pids: list[int] = []
        last_scan = 0.0
        while not self._stop.wait(self.sample_s):
            if time.monotonic() - last_scan > 1.0:  # workers start and restart rarely
                pids, last_scan = children(), time.monotonic()
            total = sum(_status_kb("VmRSS", pid) for pid in pids)
            with self._lock:
                self.children_peak = max(self.children_peak, total)
                for opened in self._open:
                    opened.children = max(opened.children, total)
                    if not self.exact:  # no resettable mark: sample this process too
                        opened.peak = max(opened.peak, rss())
