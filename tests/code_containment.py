"""Helpers of the hostile code tests: a second wall around them, what the sandbox left
on the host, and a way to run them as an unprivileged user.

A second wall, independent of the sandbox under test:

If the sandbox had a bug, a fork bomb run by root (as on CI) would meet no RLIMIT_NPROC.
So the test process moves itself into a pids cgroup (v1 or v2) with a hard cap for the
duration of the hostile tests; every sandbox it starts inherits the cgroup. Where no
cgroup can be created, a non-root run is still bounded by RLIMIT_NPROC, which the
fixture then lowers for the test process's own user.
"""

from __future__ import annotations

import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

PIDS_CAP = 400


def _pids_root() -> Path | None:
    v1 = Path("/sys/fs/cgroup/pids")
    if (v1 / "cgroup.procs").exists():
        return v1
    controllers = Path("/sys/fs/cgroup/cgroup.controllers")
    if controllers.exists() and "pids" in controllers.read_text().split():
        return controllers.parent
    return None


@contextmanager
def pids_limited():
    """Yields a description of the wall in place ("cgroup ..." or "rlimit ...")."""
    root = _pids_root()
    group = root / f"rlvr-code-tests-{os.getpid()}" if root else None
    try:
        if group is None:
            raise OSError("no pids cgroup hierarchy")
        original = (root / "cgroup.procs")
        group.mkdir()
        (group / "pids.max").write_text(str(PIDS_CAP))
        (group / "cgroup.procs").write_text(str(os.getpid()))
    except OSError:
        if group is not None and group.exists():
            try:
                (root / "cgroup.procs").write_text(str(os.getpid()))
                group.rmdir()
            except OSError:
                pass
        group = None
    if group is not None:
        try:
            yield f"cgroup {group} pids.max={PIDS_CAP}"
        finally:
            original.write_text(str(os.getpid()))
            for _ in range(100):  # sandboxes still exiting keep the group busy a moment
                try:
                    group.rmdir()
                    break
                except OSError:
                    time.sleep(0.02)
        return
    if os.geteuid() == 0:
        yield "none (root without a writable pids cgroup: only the sandbox's own uid drop)"
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    resource.setrlimit(resource.RLIMIT_NPROC, (min(hard, 4096) if hard > 0 else 4096, hard))
    try:
        yield "rlimit NPROC"
    finally:
        resource.setrlimit(resource.RLIMIT_NPROC, (soft, hard))


# --- what the sandbox left on the host ---------------------------------------------------

def pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def zygote_pid(verifier) -> int:
    """Host PID of the candidate sandbox's PID 1 (the zygote), as bwrap reported it."""
    return verifier._zygote.process.init_pid


def sandbox_processes(verifier) -> list[int]:
    """Host PIDs of the zygote and every process below it, in any nested namespace
    (orphans are re-parented to the zygote, so they are found too)."""
    root = zygote_pid(verifier)
    found = []
    for pid in pids():
        ancestor, hops = pid, 0
        while ancestor not in (None, 0, 1) and hops < 64:
            if ancestor == root:
                found.append(pid)
                break
            ancestor, hops = parent_of(ancestor), hops + 1
    return sorted(found)


def leftover_processes(verifier, settle_s: float = 2.0) -> list[int]:
    """Processes under the zygote that a check left running: all but the zygote and
    what it prepares for the next check - that check's process, waiting for its job
    with no child of its own, and as non-root the warden above it. They are forked
    just after the verdict, so they are given `settle_s` to take that shape."""
    deadline = time.monotonic() + settle_s
    while True:
        left = _not_the_zygote_or_the_next_check(verifier)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


def _not_the_zygote_or_the_next_check(verifier) -> list[int]:
    zygote = zygote_pid(verifier)
    below = [pid for pid in sandbox_processes(verifier) if pid != zygote]
    children = {pid: [c for c in below if parent_of(c) == pid] for pid in below}
    for first in (pid for pid in below if parent_of(pid) == zygote):
        if os.geteuid() == 0 and not children[first]:
            return sorted(set(below) - {first})
        if len(children[first]) == 1 and not children[children[first][0]]:
            return sorted(set(below) - {first, children[first][0]})
    return below


# --- running the hostile tests as an unprivileged user -----------------------------------

UNPRIVILEGED_UID = 65534  # nobody


def _blocked_ancestors(paths: list[str]) -> dict[str, set[str]]:
    """{directory "others" cannot enter: the names below it that `paths` go through}."""
    blocked: dict[str, set[str]] = {}
    for path in paths:
        parts = Path(path).resolve().parts
        for depth in range(1, len(parts) - 1):
            directory = str(Path(*parts[:depth + 1]))
            if not os.stat(directory).st_mode & 0o001:
                blocked.setdefault(directory, set()).add(parts[depth + 1])
    return blocked


def unprivileged_command(argv: list[str], reachable: list[str]) -> list[str]:
    """`argv` as uid nobody, in a private mount namespace where each directory on the way
    to `reachable` (the interpreter, the venv, the repository) that nobody may not enter
    (/root, say) is covered by a 0755 tmpfs holding binds of just the entries needed.
    The host's directories are not changed. Needs root, util-linux unshare and setpriv."""
    script = ["set -e"]
    for directory, names in sorted(_blocked_ancestors(reachable).items()):
        stash = tempfile.mkdtemp(prefix="rlvr-unpriv-")
        q, qs = shlex.quote(directory), shlex.quote(stash)
        script += [f"mount --bind {q} {qs}", f"mount -t tmpfs -o mode=0755 tmpfs {q}"]
        for name in sorted(names):
            target = shlex.quote(os.path.join(directory, name))
            source = shlex.quote(os.path.join(stash, name))
            make = "mkdir" if os.path.isdir(os.path.join(directory, name)) else "touch"
            script += [f"{make} {target}", f"mount --bind {source} {target}"]
        script += [f"umount {qs}", f"rmdir {qs} 2>/dev/null || true"]
    script.append(f"exec setpriv --reuid={UNPRIVILEGED_UID} --regid={UNPRIVILEGED_UID} "
                  f"--clear-groups --inh-caps=-all --bounding-set=-all "
                  + " ".join(shlex.quote(a) for a in argv))
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(script)]


def run_unprivileged(argv: list[str], reachable: list[str], timeout_s: float,
                     environment: dict[str, str] | None = None):
    # nobody's own home; not /tmp, which inside the sandbox is the check's writable dir
    env = {**os.environ, "HOME": "/nonexistent", "PYTHONDONTWRITEBYTECODE": "1",
           **(environment or {})}
    try:
        return subprocess.run(unprivileged_command(argv, reachable), capture_output=True,
                              text=True, timeout=timeout_s, env=env, cwd="/")
    finally:  # the stash directories the script could not remove from inside
        for stash in Path(tempfile.gettempdir()).glob("rlvr-unpriv-*"):
            try:
                stash.rmdir()
            except OSError:
                pass


def interpreter_paths() -> list[str]:
    """What a Python process of this test run needs to reach: the real interpreter
    (behind a venv's symlink), its prefix, the venv and every sys.path entry."""
    paths = {os.path.realpath(sys.executable), os.path.realpath(sys.base_prefix),
             sys.prefix, os.path.dirname(sys.executable)}
    paths.update(p for p in sys.path if p and os.path.exists(p))
    return sorted(paths)


# The fixtures the adversarial suites share (imported by name into each test module).
@pytest.fixture(scope="module")
def wall():
    """The module's checks under a PID limit, so a fork bomb cannot take the host."""
    with pids_limited() as description:
        yield description


@pytest.fixture(scope="module")
def verifier(wall):
    from rlvr.verifiers.code import CodeVerifier

    v = CodeVerifier()
    yield v
    v.close()


def assert_zero(verdict) -> None:
    assert verdict.score == 0.0 and not verdict.passed, verdict
