"""One memory cap for the whole candidate sandbox, so for each check's process tree.

Per process, RLIMIT_AS bounds address space; with RLIMIT_NPROC a check could still hold
processes x memory_mb (8 x 512 MB). A memory cgroup counts what the pages really cost -
every process of the check, its /tmp (tmpfs pages are charged to the writer) and kernel
memory - against one number. The sandbox (bwrap, the zygote and every check it forks)
is moved into a cgroup of its own; the zygote runs one check at a time, so the cap is
the check's cap plus a small allowance for the zygote. When a check passes it, the
kernel's OOM killer ends the check's largest process (the check's processes raise their
OOM score, see sandboxed/fresh.py), and the check fails as any crash does.

cgroup v2 is used where its memory controller can be enabled for a new group (root, or a
delegated subtree); else cgroup v1's memory hierarchy where writable (root on a v1 or
hybrid host). Where neither can be made (an ordinary user without delegation), there is
no such cap: `MemoryCap.create` says why, and only the per-process bounds hold.
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

ZYGOTE_ALLOWANCE_MB = 64   # the zygote and a warden (small, mostly shared with it)
_MB = 1024 * 1024
_names = itertools.count()


def _mounts() -> dict[str, Path]:
    """{"v2": mount point, "v1": memory hierarchy's mount point}, where mounted."""
    found: dict[str, Path] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split(" - ")
        if len(fields) != 2:
            continue
        fstype, _, options = (fields[1].split() + ["", ""])[:3]
        point = Path(fields[0].split()[4])
        if fstype == "cgroup2" and "v2" not in found:
            found["v2"] = point
        elif fstype == "cgroup" and "memory" in options.split(","):
            found["v1"] = point
    return found


def _own_path(kind: str) -> str:
    """Our cgroup's path within the hierarchy of `kind` (from /proc/self/cgroup)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if (kind == "v2" and controllers == "") or \
                (kind == "v1" and "memory" in controllers.split(",")):
            return path
    raise OSError(f"not in a cgroup {kind} memory hierarchy")


def _v2_parent(mount: Path) -> Path:
    """Where a v2 group with the memory controller can be made: under the root (which
    may hold processes and children at once), else beside our own group."""
    own = mount / _own_path("v2").lstrip("/")
    if own == mount:
        control = mount / "cgroup.subtree_control"
        if "memory" not in control.read_text().split():
            control.write_text("+memory")
        return mount
    if "memory" not in (own / "cgroup.controllers").read_text().split():
        raise OSError("the memory controller is not enabled for this cgroup")
    return own.parent


class MemoryCap:
    """A memory cgroup for one sandbox: `create`, `limit`, `add` its processes, `remove`."""

    def __init__(self, path: Path | None, kind: str, why_not: str = "") -> None:
        self.path, self.kind, self.why_not = path, kind, why_not
        self.limit_mb: int | None = None

    @classmethod
    def create(cls) -> "MemoryCap":
        mounts = _mounts()
        errors = []
        for kind in ("v2", "v1"):
            if kind not in mounts:
                continue
            try:
                parent = _v2_parent(mounts[kind]) if kind == "v2" else \
                    mounts[kind] / _own_path("v1").lstrip("/")
                _sweep(parent)
                path = parent / f"rlvr-code-{os.getpid()}-{next(_names)}"
                path.mkdir()
                cap = cls(path, kind)
                if kind == "v2" and (path / "memory.swap.max").exists():
                    (path / "memory.swap.max").write_text("0")  # no escape into swap
                return cap
            except OSError as exc:
                errors.append(f"cgroup {kind}: {exc}")
        return cls(None, "none", "; ".join(errors) or "no cgroup memory hierarchy mounted")

    @property
    def active(self) -> bool:
        return self.path is not None

    def limit(self, megabytes: int) -> None:
        if self.path is None or megabytes == self.limit_mb:
            return
        value = str(megabytes * _MB)
        if self.kind == "v2":
            (self.path / "memory.max").write_text(value)
        else:
            # With swap accounting v1 refuses a memory limit above memory+swap's
            # (EINVAL): raise memsw first when going up, lower it last when going down
            # (a new group starts unlimited: down).
            files = [self.path / "memory.limit_in_bytes"]
            swap = self.path / "memory.memsw.limit_in_bytes"
            if swap.exists():
                up = self.limit_mb is not None and megabytes > self.limit_mb
                files = [swap] + files if up else files + [swap]
            for file in files:
                file.write_text(value)
        self.limit_mb = megabytes

    def add(self, pid: int) -> None:
        if self.path is not None:
            (self.path / "cgroup.procs").write_text(str(pid))

    def peak_mb(self) -> float | None:
        """Most memory the group has held (v2 kernels before 5.19 lack memory.peak)."""
        if self.path is None:
            return None
        name = "memory.peak" if self.kind == "v2" else "memory.max_usage_in_bytes"
        try:
            return int((self.path / name).read_text()) / _MB
        except (OSError, ValueError):
            return None

    def remove(self) -> None:
        """Remove the group once the sandbox's processes have left it (they are dead)."""
        if self.path is None:
            return
        for _ in range(200):
            try:
                self.path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.005)  # the last processes are still being torn down
        self.path, self.limit_mb = None, None

    def describe(self) -> str:
        if self.path is None:
            return f"none ({self.why_not})"
        return f"cgroup {self.kind} {self.path}: {self.limit_mb} MB"


def _sweep(parent: Path) -> None:
    """Remove groups left by verifier processes that died without cleaning up."""
    for group in parent.glob("rlvr-code-*-*"):
        try:
            pid = int(group.name.split("-")[2])
            os.kill(pid, 0)
        except ProcessLookupError:
            try:
                group.rmdir()
            except OSError:
                pass
        except (ValueError, PermissionError):
            pass
