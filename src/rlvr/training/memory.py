"""Keep freed memory in the process for reuse, so every training step does not fault in
fresh pages from the kernel (glibc malloc on Linux).

Why: glibc serves allocations above a threshold (128 KiB, adapting up to 32 MiB) with
mmap and returns them to the kernel on free. A CPU policy update allocates and frees
~0.5-1 GB of activations, logits and gradients every step; each time those pages come
back from the kernel as zeroed 4 KiB pages. On the speed-against-TRL workload (SmolLM2-135M, 2
cores) that was 100k-300k page faults and ~0.4 s of a ~2.8 s update; with mmap off and
trimming deferred, the faults drop to ~0 after the first steps (measured with
getrusage; benchmarks/RESULTS.md). The cost: the process keeps its high-water mark
instead of returning memory between steps, which is what a training loop reuses anyway.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

_M_TRIM_THRESHOLD = -1  # <malloc.h>: free heap top kept below this many bytes
_M_MMAP_MAX = -4        # <malloc.h>: most chunks served by mmap at once (0 = none)


def retain_freed_memory() -> bool:
    """Ask glibc malloc to serve every allocation from its heap and not to trim it.
    Returns whether the setting took effect (False off Linux/glibc: nothing changes)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return False
    mallopt = getattr(libc, "mallopt", None)  # absent in musl
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))
