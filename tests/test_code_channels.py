"""Channels between checks that no namespace isolates: the host's page cache and the
wall clock. Each learner (benchmarks/redteam/sandbox_learners.py) has no solution logic
and learns a task's six hidden booleans across checks; here it is shown live where the
channel is open and paid no more than chance in the sandbox. The system calls that
reveal or change page-cache residency are refused inside the sandbox.
"""

from __future__ import annotations

import ast
import errno
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from code_containment import verifier, wall  # noqa: F401 (fixtures)
from rlvr.verifiers.code import CodeVerifier, fileview, runner, sandbox

from benchmarks.redteam import sandbox_learners

ITEMS = 8
X86 = platform.machine() == "x86_64"
PAGE_LEARNERS = ["page-cache", "page-fault"]


def _paid(v: CodeVerifier, name: str, items: int = ITEMS) -> int:
    code = sandbox_learners.LEARNERS[name]()
    reference = sandbox_learners.task()
    if name == "timing":  # the learner tuned to this machine's gap between checks
        code, reference = _timing_here(v)
    return sum(v.verify(code, reference).passed for _ in range(items))


_CALIBRATED: dict[str, tuple[float, float]] = {}


def _timing_here(v: CodeVerifier) -> tuple[str, dict]:
    """The timing learner with its slot and gap measured on this machine (the sandbox's
    pause off while measuring): a learner tuned to another machine's gap reads noise
    here, which would make both the live test and the paid-no-more-than-chance test
    say nothing. Skips, naming the numbers, where consecutive checks vary so much that
    a learner's slot would pass LONGEST_SLOT_S: the clock carries no state there."""
    if "slot" not in _CALIBRATED:
        saved, runner.JITTER = runner.JITTER, 0.0
        try:
            gaps = sandbox_learners.clock_gaps(v.verify)
        finally:
            runner.JITTER = saved
        _CALIBRATED["slot"] = sandbox_learners.calibrated_slot(gaps)
        print(f"gaps between checks here (ms): {sorted(round(g * 1e3, 1) for g in gaps)}")
    slot_s, gap_s = _CALIBRATED["slot"]
    if slot_s > sandbox_learners.LONGEST_SLOT_S:
        pytest.skip(f"consecutive checks here vary by {slot_s / 4 * 1e3:.0f} ms (gap "
                    f"{gap_s * 1e3:.0f} ms): a timing learner would need {slot_s * 1e3:.0f} ms "
                    f"slots, over {sandbox_learners.LONGEST_SLOT_S * 1e3:.0f}")
    cycle = 128 * slot_s  # a check waits up to two cycles (forget, then save)
    return (sandbox_learners.timing_learner(slot_s=slot_s, gap_s=gap_s),
            sandbox_learners.task(timeout_s=3 * cycle))


@pytest.mark.parametrize("name", list(sandbox_learners.LEARNERS))
def test_learners_are_paid_no_more_than_chance(verifier, name):
    """A learner that carries nothing answers True where it does not know: it passes
    only if what it read by accident was the answer (1 in 64 at most per item)."""
    if name in PAGE_LEARNERS and verifier_view().base is None:
        pytest.skip(f"the sandbox shows host files here: {verifier_view().status}")
    paid = _paid(verifier, name)
    assert paid <= 1, f"{name}: {paid}/{ITEMS} paid: state carried across checks"


def verifier_view() -> fileview.FileView:
    from rlvr.verifiers.code import packages
    return sandbox.file_view(packages.resolve(packages.DEFAULT_PACKAGES))


def _stdlib_file_on_disk(relative: str) -> str | None:
    """The host file a page learner uses, or None if its file system keeps no state
    (tmpfs), where the learner cannot be live."""
    import glob
    path = glob.glob(os.path.join(os.path.dirname(os.__file__), relative))[0]
    return None if fileview._fstype(os.path.realpath(path)) in ("tmpfs", "ramfs") else path


_HARNESS = """
SECRET = {secret!r}
try:
    for i, b in enumerate(SECRET):
        assert bit(i) is b
    print('passed')
except AssertionError:
    print('failed')
"""


@pytest.mark.parametrize("name", PAGE_LEARNERS)
def test_page_learners_are_live_on_host_files(name):
    """The same programs as plain processes on the host, one after another, as the
    sandbox ran checks before its files were tmpfs copies: they learn the answers
    through the host's page cache, so the 0 above is the sandbox's doing."""
    relative = "pydoc_data/topics.py" if name == "page-cache" else "ensurepip/_bundled/pip-*.whl"
    if _stdlib_file_on_disk(relative) is None:
        pytest.skip("the standard library is on tmpfs here: no page-cache state to learn")
    program = (sandbox_learners.LEARNERS[name]()
               + _HARNESS.format(secret=sandbox_learners.SECRET))
    outcomes = [subprocess.run([sys.executable, "-I", "-S", "-c", program], capture_output=True,
                               text=True, timeout=60).stdout.strip() for _ in range(ITEMS)]
    assert outcomes.count("passed") >= ITEMS // 2, outcomes


def test_timing_learner_is_live_without_the_pause(wall, monkeypatch):
    """Without the random pause before each check (runner.JITTER = 0) the timing
    learner is paid: the moment a check starts tells it when the previous one ended."""
    monkeypatch.setattr(runner, "JITTER", 0.0)
    v = CodeVerifier()
    try:
        paid = _paid(v, "timing")
    finally:
        v.close()
    assert paid >= 2, f"only {paid}/{ITEMS}: the timing learner itself does not work here"


# --- what a check can see and call -----------------------------------------------------

def _probe(v: CodeVerifier, body: str):
    reference = {"test": "def check(candidate):\n    value = candidate()\n"
                         "    assert False, repr(value)\n", "entry_point": "probe"}
    verdict = v.verify(body, reference)
    error = verdict.details["errors"][0]
    assert error.startswith("AssertionError: "), verdict
    return ast.literal_eval(error[len("AssertionError: "):])


def test_every_file_system_a_check_sees_is_in_memory(verifier):
    """No file a check can open is backed by a disk, so none has page-cache state."""
    view = verifier_view()
    if view.base is None:
        pytest.skip(f"the sandbox shows host files here: {view.status}")
    body = ("def probe():\n"
            "    mounts = [(l.split(' - ')[1].split()[0], l.split()[4])\n"
            "              for l in open('/proc/self/mountinfo')]\n"
            "    return [sorted({kind for kind, _ in mounts}),\n"
            "            sorted(p for _, p in mounts if p in ('/usr', '/rlvr', '/packages/numpy'))]\n")
    kinds, points = _probe(verifier, body)
    # devtmpfs: /dev/null and the other device nodes bwrap binds (no file data)
    assert set(kinds) <= {"tmpfs", "proc", "devpts", "devtmpfs"}, kinds
    assert points == ["/packages/numpy", "/rlvr", "/usr"], points


_SYSCALLS = """
import ctypes, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def probe():
    out = {}
    fd = os.open('/rlvr/protocol.py', os.O_RDONLY)
    buf = ctypes.create_string_buffer(4096)
    iov = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 4096)
    region = mmap.mmap(-1, 4096)
    addr = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(region)))
    def call(name, *args):
        ctypes.set_errno(0)
        result = libc.syscall(*args)
        out[name] = result if result >= 0 else -ctypes.get_errno()
    call('fadvise64', 221, fd, 0, 0, 4)
    call('readahead', 187, fd, 0, 4096)
    call('mincore', 27, addr, 4096, ctypes.create_string_buffer(1))
    call('cachestat', 451, fd, None, None, 0)
    call('preadv2 RWF_NOWAIT', 327, fd, iov, 1, 0, 0, 8)
    call('pwritev2 RWF_NOWAIT', 328, fd, iov, 1, 0, 0, 8)
    call('madvise MADV_COLD', 28, addr, 4096, 20)
    call('madvise MADV_PAGEOUT', 28, addr, 4096, 21)
    call('process_madvise', 440, 0, None, 0, 21, 0)
    call('io_setup', 206, 8, ctypes.byref(ctypes.c_ulong(0)))
    call('io_submit', 209, 0, 0, None)
    call('memfd_secret', 447, 0)
    call('userfaultfd', 323, 0)
    call('sysinfo', 99, ctypes.create_string_buffer(128))
    call('preadv2', 327, fd, iov, 1, 0, 0, 0)
    call('madvise MADV_DONTNEED', 28, addr, 4096, 4)
    return list(out.values())  # the verdict's error text is short: numbers only
"""
REFUSED = ["fadvise64", "readahead", "mincore", "cachestat", "preadv2 RWF_NOWAIT",
           "pwritev2 RWF_NOWAIT", "madvise MADV_COLD", "madvise MADV_PAGEOUT",
           "process_madvise", "io_setup", "io_submit", "memfd_secret", "userfaultfd", "sysinfo"]


@pytest.mark.skipif(not X86, reason="the probe's syscall numbers are x86_64's")
def test_calls_that_reveal_or_change_residency_are_refused(verifier):
    out = dict(zip(REFUSED + ["preadv2", "madvise MADV_DONTNEED"], _probe(verifier, _SYSCALLS)))
    refused = {name: out[name] for name in REFUSED}
    assert all(code in (-errno.EPERM, -errno.ENOSYS) for code in refused.values()), refused
    # the filter looks at the flags and the advice, not the call alone
    assert out["preadv2"] == 4096 and out["madvise MADV_DONTNEED"] == 0, out


def test_numpy_still_works_without_sysinfo(verifier):
    body = ("import numpy as np\n"
            "def probe():\n"
            "    a = np.array([[2.0, 1.0], [1.0, 3.0]])\n"
            "    return [float(np.linalg.det(a)), float((a @ a).sum())]\n")
    assert _probe(verifier, body) == pytest.approx([5.0, 25.0])  # det 6 - 1; a @ a = [[5, 5], [5, 10]]


# --- the file view ---------------------------------------------------------------------

def test_without_a_tmpfs_the_view_falls_back_to_host_files_and_says_why(tmp_path, monkeypatch):
    if fileview._fstype(str(tmp_path)) == "tmpfs":
        pytest.skip(f"{tmp_path} is a tmpfs here: no fallback to show")
    monkeypatch.setattr(fileview, "SHM", str(tmp_path))
    python, prefix = sandbox._python()
    view = fileview.view.__wrapped__(python, prefix, str(sandbox.SANDBOXED_DIR), (), ())
    assert view.base is None and view.status.startswith("host files"), view
    assert f"{tmp_path} is not a tmpfs" in view.status


def test_the_copies_are_shared_read_only_and_owned_by_this_user(verifier):
    view = verifier_view()
    if view.base is None:
        pytest.skip(f"the sandbox shows host files here: {view.status}")
    home = os.path.dirname(view.base.root)
    st = os.stat(home)
    assert st.st_uid == os.getuid() and not st.st_mode & 0o022
    assert fileview._fstype(view.base.root) == "tmpfs"
    # the interpreter inside is the copy, with the host's bytes
    python, _ = sandbox._python()
    copy = Path(view.base.root + python)
    assert copy.read_bytes() == Path(python).read_bytes()
    # a second process reuses the same layer instead of copying again
    again = subprocess.run([sys.executable, "-c",
                            "from rlvr.verifiers.code import sandbox, packages; "
                            "print(sandbox.file_view(packages.resolve(('numpy',))).base.root)"],
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert again.stdout.strip() == view.base.root, again.stderr[-2000:]


def test_a_build_removes_only_the_copies_no_process_holds(tmp_path):
    import fcntl
    for name in ("base-unused", "pkg-held", "base-kept.build-1"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "file").write_text("x")
    held = os.open(tmp_path / "pkg-held.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(held, fcntl.LOCK_SH)  # as a live verifier process holds its copies
    kept = os.open(tmp_path / "base-kept.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(kept, fcntl.LOCK_SH)  # a build in progress holds its layer's lock
    try:
        fileview._sweep(str(tmp_path), keep=str(tmp_path / "base-new"))
    finally:
        os.close(held)
        os.close(kept)
    left = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert left == ["base-kept.build-1", "pkg-held"]
