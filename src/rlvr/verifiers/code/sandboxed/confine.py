"""Self-confinement every sandboxed process applies before it runs code it did not write.

Runs first in the sandbox, while the process is still ours: resource limits (which an
unprivileged process can lower but never raise again), no-new-privileges (so a setuid
binary on the read-only /usr cannot regain root), and, when bubblewrap ran as root, the
switch to an unprivileged uid. The uid switch is what makes RLIMIT_NPROC bind: the
kernel does not apply it to uid 0, so a fork bomb run as root would be unbounded.
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import struct

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_DUMPABLE = 4
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_MB = 1024 * 1024
_CLONE_NEWUSER = 0x10000000
_X32_BIT = 0x40000000
_AF_UNIX = 1
# machine -> AUDIT_ARCH value and the syscall numbers the filter names
_ARCHES = {
    "x86_64": {"arch": 0xC000003E, "clone": 56, "unshare": 272, "clone3": 435,
               "socket": 41, "socketpair": 53, "preadv2": 327, "pwritev2": 328, "madvise": 28,
               "denied": {"shmget": 29, "semget": 64, "msgget": 68, "memfd_create": 319,
                          "mq_open": 240, "add_key": 248, "request_key": 249, "keyctl": 250,
                          "io_uring_setup": 425, "fadvise64": 221, "readahead": 187,
                          "mincore": 27, "cachestat": 451, "io_setup": 206, "io_submit": 209,
                          "process_madvise": 440, "memfd_secret": 447, "userfaultfd": 323,
                          "sysinfo": 99}},
    "aarch64": {"arch": 0xC00000B7, "clone": 220, "unshare": 97, "clone3": 435,
                "socket": 198, "socketpair": 199, "preadv2": 286, "pwritev2": 287, "madvise": 233,
                "denied": {"shmget": 194, "semget": 190, "msgget": 186, "memfd_create": 279,
                           "mq_open": 180, "add_key": 217, "request_key": 218, "keyctl": 219,
                           "io_uring_setup": 425, "fadvise64": 223, "readahead": 213,
                           "mincore": 232, "cachestat": 451, "io_setup": 0, "io_submit": 2,
                           "process_madvise": 440, "memfd_secret": 447, "userfaultfd": 282,
                           "sysinfo": 179}},
}
_RWF_NOWAIT = 0x8                   # preadv2/pwritev2 flags (args[5])
_MADV_COLD, _MADV_PAGEOUT = 20, 21  # madvise advice (args[2]): reclaim these pages now
# classic BPF opcodes and seccomp return values
_LD_W, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _EPERM, _ENOSYS = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38


def apply_limits(limits: dict) -> None:
    """limits: cpu_s, memory_mb, processes, file_mb, open_files (all required)."""
    pairs = [
        (resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1)),
        (resource.RLIMIT_AS, (limits["memory_mb"] * _MB,) * 2),
        (resource.RLIMIT_NPROC, (limits["processes"],) * 2),
        (resource.RLIMIT_FSIZE, (limits["file_mb"] * _MB,) * 2),
        (resource.RLIMIT_NOFILE, (limits["open_files"],) * 2),
        (resource.RLIMIT_CORE, (0, 0)),
    ]
    for which, pair in pairs:
        resource.setrlimit(which, pair)


def no_new_privileges() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")


def _assemble(lines: list) -> bytes:
    """Classic BPF from (label or None, code, true target, false target, k) lines;
    targets are labels or None (the next instruction)."""
    where = {line[0]: index for index, line in enumerate(lines) if line[0]}
    program = []
    for index, (_, code, true, false, k) in enumerate(lines):
        jt = where[true] - index - 1 if true else 0
        jf = where[false] - index - 1 if false else 0
        program.append(struct.pack("=HBBI", code, jt, jf, k))
    return b"".join(program)


def _filter_program(table: dict) -> bytes:
    denied = [(None, _JEQ, "deny", None, nr) for nr in table["denied"].values()]
    return _assemble([
        (None, _LD_W, None, None, 4),                    # A = arch
        (None, _JEQ, "native", "deny", table["arch"]),   # a foreign ABI (i386 on x86_64)
        ("native", _LD_W, None, None, 0),                # A = syscall number
        (None, _JGE, "deny", None, _X32_BIT),            # x32 numbers alias the native ones
        (None, _JEQ, "enosys", None, table["clone3"]),   # libc then falls back to clone
        *denied,
        (None, _JEQ, "rwflags", None, table["preadv2"]),
        (None, _JEQ, "rwflags", None, table["pwritev2"]),
        (None, _JEQ, "advice", None, table["madvise"]),
        (None, _JEQ, "flags", None, table["clone"]),
        (None, _JEQ, "flags", None, table["unshare"]),
        (None, _JEQ, "domain", None, table["socket"]),
        (None, _JEQ, "domain", "allow", table["socketpair"]),
        ("flags", _LD_W, None, None, 16),                # A = low word of args[0]
        (None, _JSET, "deny", "allow", _CLONE_NEWUSER),
        ("domain", _LD_W, None, None, 16),               # A = the address family
        (None, _JEQ, "allow", "deny", _AF_UNIX),
        ("rwflags", _LD_W, None, None, 16 + 5 * 8),      # A = low word of args[5]
        (None, _JSET, "deny", "allow", _RWF_NOWAIT),
        ("advice", _LD_W, None, None, 16 + 2 * 8),       # A = low word of args[2]
        (None, _JEQ, "deny", None, _MADV_COLD),
        (None, _JEQ, "deny", "allow", _MADV_PAGEOUT),
        ("enosys", _RET, None, None, _ENOSYS),
        ("deny", _RET, None, None, _EPERM),
        ("allow", _RET, None, None, _ALLOW),
    ])


def install_seccomp_filter() -> None:
    """A seccomp filter for what rlimits cannot bound:
    - new user namespaces (unshare/clone with CLONE_NEWUSER; clone3 answers ENOSYS so
      libc falls back to clone): inside one, a process could mount an unbounded tmpfs;
    - SysV shared memory, semaphores and message queues: they outlive every process
      and are not charged to RLIMIT_AS once detached, so they could fill host memory
      and carry state from one check to the next in the same IPC namespace;
    - memfd_create: anonymous files outside the size-capped /tmp;
    - POSIX message queues (mq_open) and the kernel keyrings (add_key, request_key,
      keyctl): state outside every file system. Keys are kept per uid, outlive the
      sandbox and would let one check tell the next what it learnt;
    - sockets of any family but AF_UNIX: an IP socket leaves state in the sandbox's
      network namespace after its process is gone (TIME_WAIT entries in /proc/net/tcp,
      the ephemeral port sequence) that the next check could read. Unix sockets are
      files in the check's own /tmp, or abstract names that die with their process;
    - io_uring, whose operations (socket creation among them) bypass this filter;
    - what reveals or changes whether a file's pages are cached, a state the whole host
      shares: fadvise64, readahead, mincore, cachestat, preadv2/pwritev2 with
      RWF_NOWAIT (which fails on an uncached page), madvise MADV_COLD/MADV_PAGEOUT and
      process_madvise (which reclaim pages), and asynchronous I/O (io_setup,
      io_submit). The files a check can open are tmpfs copies anyway (fileview.py),
      whose pages are always in memory; this is the second wall;
    - memfd_secret and userfaultfd: memory outside the check's limits, and a way to
      stall the kernel on a page fault;
    - sysinfo: host-wide load, free memory and page-cache size.
    With these refused, no IPC object and no network state can be created at all, so
    the sandbox's IPC and network namespaces hold nothing a check wrote.
    x32 syscall numbers (an alias of the native table) and foreign ABIs are refused."""
    table = _ARCHES.get(platform.machine())
    if table is None:
        raise OSError(f"no seccomp filter for {platform.machine()}")
    program = _filter_program(table)
    filters = ctypes.create_string_buffer(program, len(program))
    fprog = struct.pack("=HxxxxxxQ", len(program) // 8, ctypes.addressof(filters))
    fprog_buffer = ctypes.create_string_buffer(fprog, len(fprog))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, fprog_buffer, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "installing the seccomp filter failed")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


def drop_capabilities() -> None:
    """Empty every capability set (effective, permitted, inheritable; ambient follows).
    As root the uid switch has done this already; in a user namespace the zygote kept
    CAP_SYS_ADMIN to build each check's namespaces, and the check must not inherit it."""
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (ctypes.c_uint32 * 6)()      # two zeroed __user_cap_data_struct
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def drop_to(uid: int | None) -> None:
    if uid is None:
        return
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise OSError("could not drop to the sandbox uid")


def non_dumpable() -> None:
    """No process of our uid may ptrace us or open our /proc entries (memory, fds)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")


# Imported once by the warm hosts before they fork, so each check's process (judge or
# candidate) finds the modules solutions and tests use most already loaded.
COMMON_MODULES = ("typing", "math", "re", "collections", "itertools", "functools", "heapq",
                  "bisect", "string", "random", "fractions", "decimal", "hashlib", "copy")


def preload_common_modules() -> None:
    import importlib
    for name in COMMON_MODULES:
        importlib.import_module(name)


def confine(config: dict) -> None:
    """Everything above, in the order that works: limits and prctl need no privilege,
    the uid switch comes late because it also drops the capabilities bwrap left us;
    whatever capability is still held after it (user-namespace mode) is dropped last."""
    apply_limits(config["limits"])
    no_new_privileges()
    install_seccomp_filter()
    drop_to(config.get("drop_uid"))
    drop_capabilities()
