"""Programs with no solution logic that try to learn a task's hidden answers across
checks of the code verifier, each through one channel that outlives a check:

- page-cache: bits kept in whether pages of a read-only stdlib file
  (pydoc_data/topics.py, which no check imports) sit in the host's page cache; a bit is
  read with `preadv2(RWF_NOWAIT)` (EAGAIN on a page that is not cached), set by reading
  the page and cleared with `posix_fadvise(POSIX_FADV_DONTNEED)`;
- page-fault: the same bits (in pages of ensurepip's bundled pip wheel), read by
  touching the page through a mapping and counting major faults
  (`getrusage().ru_majflt`), which no system call filter can see;
- timing: the state is the wall-clock moment the check returns its last answer, one of
  128 slots of 25 ms (7 bits, half of them meaning "no state"), read by the next check
  from the clock when it starts.

The task (`task()`) is six boolean asserts in a HumanEval `check`, which stops at the
first failing assert: a call that comes after a guess means the guess was right. The
learner's state is the prefix of the answer it knows (at most five bits: whether the
last assert held, no check can see, so it answers True there), as the number
`(1 << len(prefix)) | bits`; it starts over from nothing when what it reads is not a
state. Chance alone passes one item in 64.

Used by benchmarks/redteam/bench_redteam_sandbox.py and tests/test_code_channels.py.
"""

from __future__ import annotations

SECRET = (True, False, True, True, False, True)

# The learner's state machine, shared by every channel. `load()` returns the state
# left by the previous check (0: none); `save(v)` leaves v for the next one.
_CORE = '''
N = {n}
def _bits(v):
    if not 0 < v < (1 << N):
        return []
    return [bool(v >> i & 1) for i in range(v.bit_length() - 1)]
def _state(bits):
    return (1 << len(bits)) | sum(b << i for i, b in enumerate(bits))
try:
    known = _bits(load())
except Exception:
    known = []
if known:
    forget()   # a wrong belief stops the check early: start over next time
def bit(i):
    if i == len(known) + 1:   # a call after a guess: the guess was right
        known.append(True)
    answer = known[i] if i < len(known) else True
    if i == len(known) and i < N - 1:
        save(_state(known + [False]))   # a guess: wrong unless another call comes
    elif i == N - 1 and len(known) == N - 1:
        save(_state(known))   # all a check can learn: whether the last assert held, it cannot
    return answer
'''

# Bits in pages of a stdlib file no check reads: slot k is page k*STRIDE (k < 8) and its
# complement slot k + 8, so a file nobody touched reads as "no state". Each learner has
# its own file, so one does not start from what another left; a page fault reads a
# large folio (16 pages and more here), hence the wider stride through the mapping.
_PAGES = '''
import glob, os, mmap, resource
PATH = glob.glob(os.path.join(os.path.dirname(os.__file__), {path!r}))[0]
PAGE, STRIDE, WIDTH, BASE = mmap.PAGESIZE, {stride}, 8, 0
def _offset(k):
    return (BASE + k * STRIDE) * PAGE
def _fd():
    fd = os.open(PATH, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # no readahead into neighbours
    except OSError:
        pass
    return fd
def _set(fd, k, on):
    if on:
        os.pread(fd, 1, _offset(k))
    else:
        os.posix_fadvise(fd, _offset(k), STRIDE * PAGE, os.POSIX_FADV_DONTNEED)
def save(v):
    fd = _fd()
    try:
        for k in range(WIDTH):
            on = bool(v >> k & 1)
            _set(fd, k, on)
            _set(fd, k + WIDTH, not on)
    finally:
        os.close(fd)
def forget():
    save(1)
def load():
    cached = _cached()
    v = 0
    for k in range(WIDTH):
        if cached[k] == cached[k + WIDTH]:
            _wipe()
            return 0
        v |= cached[k] << k
    return v
def _wipe():
    # No state, or one the host's own reads garbled (a large folio read sequentially
    # covers several slots): drop the whole file, so the next slots are pages again.
    fd = os.open(PATH, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
'''

_READ_NOWAIT = '''
def _cached():
    fd = _fd()
    try:
        out = []
        for k in range(2 * WIDTH):
            try:
                os.preadv(fd, [bytearray(1)], _offset(k), os.RWF_NOWAIT)
                out.append(1)
            except BlockingIOError:
                out.append(0)
        return out
    finally:
        os.close(fd)
'''

_READ_FAULTS = '''
def _cached():
    fd = os.open(PATH, os.O_RDONLY)
    try:
        view = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
    finally:
        os.close(fd)
    view.madvise(mmap.MADV_RANDOM)  # fault in the touched page only
    out = []
    for k in range(2 * WIDTH):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
        view[_offset(k)]
        out.append(int(resource.getrusage(resource.RUSAGE_SELF).ru_majflt == before))
    view.close()  # unmapped, so the clearing below can drop them again
    save(_state_of(out))
    return out
def _state_of(cached):
    v = 0
    for k in range(WIDTH):
        if cached[k] == cached[k + WIDTH]:
            return 0
        v |= cached[k] << k
    return v
'''

# The state is the moment the check returns, as a slot of SLOT_S seconds in a cycle of
# 128 slots (7 bits); the next check reads the clock at start and takes off the usual gap.
_CLOCK = '''
import time
SLOT_S, GAP_S, SLOTS = {slot_s!r}, {gap_s!r}, 128
STARTED = time.time()
def load():
    v = int((STARTED - GAP_S) / SLOT_S) % SLOTS
    return v if v < 1 << N else 0
def forget():
    # A check that stops on a wrong belief returns within milliseconds of this: be in
    # the half of the cycle that decodes as no state, far enough from its end.
    while not SLOTS // 2 <= int(time.time() / SLOT_S) % SLOTS < SLOTS - 8:
        time.sleep(SLOT_S / 4)
def save(v):
    now = time.time()
    cycle = SLOT_S * SLOTS
    target = (now // cycle) * cycle + (v + 0.5) * SLOT_S
    if target < now + 0.002:
        target += cycle
    time.sleep(max(0.0, target - now - 0.002))
    while time.time() < target:
        pass
'''


def task(secret: tuple[bool, ...] = SECRET, timeout_s: float = 10) -> dict:
    """The HumanEval-style reference the learners are graded against."""
    asserts = "".join(f"    assert candidate({i}) is {b}\n" for i, b in enumerate(secret))
    return {"test": "def check(candidate):\n" + asserts, "entry_point": "bit",
            "timeout": timeout_s}


def page_cache_learner(n: int = len(SECRET)) -> str:
    return _PAGES.format(path='pydoc_data/topics.py', stride=4) + _READ_NOWAIT + _CORE.format(n=n)


def page_fault_learner(n: int = len(SECRET)) -> str:
    return _PAGES.format(path='ensurepip/_bundled/pip-*.whl', stride=32) + _READ_FAULTS + _CORE.format(n=n)


def timing_learner(n: int = len(SECRET), slot_s: float = 0.025, gap_s: float = 0.016) -> str:
    return _CLOCK.format(slot_s=slot_s, gap_s=gap_s) + _CORE.format(n=n)


# A check that reports the clock the moment it is called (in its assertion message), to
# measure the gap between one check's last moment and the next check's first.
CLOCK_PROBE = "import time\ndef bit(i):\n    raise AssertionError(repr(time.time()))\n"
LONGEST_SLOT_S = 0.08  # a cycle of 128 slots is then 10 s: a check waits up to that


def clock_gaps(verify, probes: int = 9) -> list[float]:
    """Seconds from one check's clock reading to the next's, over `probes` consecutive
    checks through `verify(code, reference) -> Verdict`. Measured with the sandbox's pause
    off, this is the machine's own gap: the offset a timing learner takes off the clock."""
    moments = []
    for _ in range(probes):
        error = verify(CLOCK_PROBE, task()).details["errors"][0]
        moments.append(float(error.split(": ", 1)[1].strip("'\"")))
    return [b - a for a, b in zip(moments, moments[1:])]


def calibrated_slot(gaps: list[float]) -> tuple[float, float]:
    """(slot_s, gap_s) for a timing learner on a machine whose consecutive checks are
    `gaps` apart: the median gap, and slots four times the spread of the middle gaps
    (a state decodes right while the gap is within half a slot of the median), at least
    the default 25 ms. The slot may exceed LONGEST_SLOT_S: the caller decides whether a
    learner that slow is worth running."""
    ordered = sorted(gaps)
    trimmed = ordered[1:-1] if len(ordered) > 4 else ordered  # one outlier each side
    median = ordered[len(ordered) // 2]
    spread = max(abs(g - median) for g in trimmed)
    return max(0.025, 4 * spread), median


LEARNERS = {"page-cache": page_cache_learner, "page-fault": page_fault_learner,
            "timing": timing_learner}
