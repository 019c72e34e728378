"""A second wall around the hostile code tests, independent of the sandbox under test.

If the sandbox had a bug, a fork bomb run by root (as on CI) would meet no RLIMIT_NPROC.
So the test process moves itself into a pids cgroup (v1 or v2) with a hard cap for the
duration of the hostile tests; every sandbox it starts inherits the cgroup. Where no
cgroup can be created, a non-root run is still bounded by RLIMIT_NPROC, which the
fixture then lowers for the test process's own user.
"""

from __future__ import annotations

import os
import resource
import time
from contextlib import contextmanager
from pathlib import Path

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
