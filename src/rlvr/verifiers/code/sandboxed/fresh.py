"""A fresh kernel state for every check, made by the zygote's per-check processes.

The warm zygote serves thousands of checks, and whatever kernel state one check can
write and the next can read is a channel between them: a program with no solution
logic can learn the hidden answers across checks ("did another call come after my
guess?"). So each check gets namespaces of its own, created in two steps because a
new PID namespace only applies to the children of the process that makes it:

1. as root, the zygote itself unshares a PID namespace, forks, and returns to its own
   (setns); the child, PID 1 of the new namespace, unshares mount, IPC and UTS
   namespaces, mounts an empty size-capped tmpfs on /tmp and sets the fixed hostname.
   In bwrap's user namespace the zygote cannot return to its own PID namespace, so a
   *warden* (a fork of the zygote, still trusted) unshares all four, does the same and
   forks the check's process;
2. the check's process is PID 1 of the new PID namespace. It mounts a /proc of its own
   namespace (showing only its own processes, and with `subset=pid` none of the
   host-wide files such as /proc/key-users), makes itself the OOM killer's first
   choice, then confines itself and runs the check.

When the check ends the zygote kills it (and the warden); the kernel then frees the namespaces and the
tmpfs with every file and the PID counter the check touched. Nothing needs emptying, so
nothing a check leaves (symlinks, 10,000 nested directories, files it made unreadable)
can break the clean-up.

The network namespace stays the sandbox's: a new one per check costs ~3 ms, about as
much as a whole check. Instead no check can put anything in it: seccomp (confine.py) refuses
every socket family but AF_UNIX, and io_uring. IPC objects cannot be created either
(SysV and POSIX queues refused), so the new IPC namespace per check is a second wall.

Needs CAP_SYS_ADMIN in the sandbox's user namespace (bwrap --cap-add); the check
process drops every capability in `confine` before untrusted code runs.
"""

from __future__ import annotations

import ctypes
import errno

HOSTNAME = b"sandbox"
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x2, 0x4, 0x8
_MS_BIND, _MS_REC, _MS_PRIVATE = 0x1000, 0x4000, 0x40000
_PR_SET_DUMPABLE = 4
# With a plain /proc (kernels before 5.8 lack subset=pid) these still show host-wide
# state: other uids' key usage, the keys we may view.
_HOST_WIDE_PROC_FILES = ("/proc/key-users", "/proc/keys")
_INODES = 16384  # files + directories in one check's /tmp (a tmpfs inode is kernel memory)

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {errno.errorcode.get(code, code)}")


def _mount(source: bytes | None, target: bytes, fstype: bytes | None, flags: int,
           data: bytes | None = None) -> None:
    _check(_libc.mount(source, target, fstype, ctypes.c_ulong(flags), data),
           f"mount {target.decode()}")


def enter_check_namespaces(tmp: str, tmpfs_mb: int, pid: bool = True) -> None:
    """New namespaces (PID only for the caller's children; `pid=False` when the caller
    already is PID 1 of a new one), an empty /tmp and the fixed hostname."""
    flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | (CLONE_NEWPID if pid else 0)
    _check(_libc.unshare(flags), "unshare")
    # Mounts below stay in this check's mount namespace, never reaching the zygote's.
    _mount(None, b"/", None, _MS_REC | _MS_PRIVATE)
    options = f"size={tmpfs_mb * 1024 * 1024},nr_inodes={_INODES},mode=1777".encode()
    _mount(b"tmpfs", tmp.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options)
    _check(_libc.sethostname(HOSTNAME, len(HOSTNAME)), "sethostname")


def next_child_in_new_pid_namespace() -> None:
    """The caller's next child will be PID 1 of a new PID namespace."""
    _check(_libc.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")


def children_in_own_pid_namespace(own: int) -> None:
    """Undo the above, so that it can be done again (the kernel allows unshare of a PID
    namespace only while the caller's children would land in its own). `own`: an fd
    of /proc/self/ns/pid. Needs CAP_SYS_ADMIN over the namespace's owner, which the
    zygote has as root but not inside bwrap's user namespace (the PID namespace is
    owned by an outer one there): there each check has a warden instead."""
    _check(_libc.setns(own, CLONE_NEWPID), "setns(CLONE_NEWPID)")


def prepare_check_process() -> None:
    """In PID 1 of the check's namespaces, before it confines itself."""
    _mount_own_proc()
    _prefer_for_oom_kill()


def _mount_own_proc() -> None:
    """A /proc that shows this PID namespace only."""
    flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    try:
        _mount(b"proc", b"/proc", b"proc", flags, b"subset=pid")
        return
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
    _mount(b"proc", b"/proc", b"proc", flags)  # older kernel: hide what it shows
    for path in _HOST_WIDE_PROC_FILES:
        _mount(b"/dev/null", path.encode(), None, _MS_BIND)


def _prefer_for_oom_kill() -> None:
    """Make the check's processes the OOM killer's first choice in the sandbox's memory
    cgroup, ahead of the zygote. Raising one's own score needs no privilege. The check
    may lower it again, but not below the zygote's 0; then the OOM killer goes by size,
    and a check near its cap is far larger than the zygote.
    Forks of the non-dumpable zygote cannot open their own /proc files in a user
    namespace (they belong to the namespace's root), hence the dumpable moment."""
    _check(_libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
    try:
        with open("/proc/self/oom_score_adj", "w") as adj:
            adj.write("1000")
    finally:
        _check(_libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
