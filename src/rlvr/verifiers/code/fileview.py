"""What a sandbox's processes may read, as copies in memory (tmpfs), not the host's files.

Whether a page of a file sits in the host's page cache is state that no namespace
isolates: one check can set it (read the page) or clear it (fadvise, or memory
pressure in its own cgroup), and the next can read it (a read that would block, a
major page fault, a slower read). A program with no solution logic learnt a task's
hidden answers across checks that way. A file on tmpfs has no such state: its pages
are always in memory (there is no disk to read them from; fadvise ignores them, and
without swap nothing evicts them), so reading one neither changes nor reveals anything,
however often the same copy is shared.

So every file a sandbox can open is a copy on tmpfs (/dev/shm): the interpreter, its
standard library without site-packages (and without the CPython test suite and the
static library for building extensions), the shared libraries these and the listed
packages load (their `ldd` closure), the time zone database, rlvr's `sandboxed/`
scripts and each listed package. sandbox.py binds these read-only at the host paths,
so a read-only bind never updates their access times either.

The copies are made once per host and shared by every verifier process of this uid:
`/dev/shm/rlvr-sandbox-<uid>/<layer>-<key>`, where the key hashes each source file's
path, size and modification time (a changed install makes a new layer). Each layer a
process uses is held with a shared lock until the process exits; a process that builds
a layer removes the layers no one holds. Where /dev/shm is not a usable tmpfs, the view
falls back to binding the host's files and says why (`FileView.status`).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from functools import lru_cache

SHM = "/dev/shm"
_SKIP_DIRS = {"site-packages", "dist-packages", "test"}  # "test": the CPython test suite
_CONFIG_DIR = re.compile(r"^config-\d")
_LDD_PATH = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")
ZONEINFO = "/usr/share/zoneinfo"
_TMPFS = "tmpfs"


class ViewError(OSError):
    """A copy could not be made (no tmpfs, no room, a file that vanished)."""


@dataclass(frozen=True)
class Layer:
    """One copied tree: `root` on tmpfs, holding files at their paths below `root`."""

    root: str


@dataclass(frozen=True)
class FileView:
    """base: the interpreter, stdlib, libraries, zoneinfo and rlvr's scripts, laid out
    by host path below base.root (rlvr's scripts at base.root/rlvr); packages: one
    layer per listed package, holding it at layer.root/<name>; syslibs: a layer of
    libraries only the packages need (or None). All None: host files (see status)."""

    base: Layer | None
    packages: tuple[Layer, ...]
    syslibs: Layer | None
    status: str


def _fstype(path: str) -> str | None:
    """The file system type of the mount that holds `path` (longest mount prefix)."""
    best, kind = "", None
    try:
        with open("/proc/self/mountinfo") as mounts:
            for line in mounts:
                left, right = line.split(" - ", 1)
                point = left.split()[4]
                if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= len(best):
                    best, kind = point, right.split()[0]
    except OSError:
        return None
    return kind


def _stdlib_dirs(prefix: str) -> list[str]:
    paths = {sysconfig.get_path(k, vars={"base": prefix, "platbase": prefix,
                                         "installed_base": prefix, "installed_platbase": prefix})
             for k in ("stdlib", "platstdlib")}
    dynload = sysconfig.get_config_var("DESTSHARED")
    if dynload:
        paths.add(dynload)
    return sorted(p for p in paths if p and os.path.isdir(p))


def _walk(root: str, skip: bool = True):
    """Every file below root (links followed, linked directories left out), without
    the excluded directories when `skip`."""
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(top, d))
                         and not (skip and (d in _SKIP_DIRS or _CONFIG_DIR.match(d))))
        for name in sorted(files):
            yield os.path.join(top, name)


def _elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _needed(binaries: list[str], home: str) -> set[str]:
    """Every shared library the dynamic loader resolves for `binaries` (ldd), kept in
    `home` by the binaries' identity: running ldd on them all takes a second."""
    cache = os.path.join(home, f"ldd-{_key('ldd', [(b, b) for b in binaries])}")
    try:
        with open(cache) as f:
            return set(f.read().split("\n")) - {""}
    except OSError:
        pass
    found = _run_ldd(binaries)
    with open(cache + f".{os.getpid()}", "w") as f:
        f.write("\n".join(sorted(found)))
    os.replace(cache + f".{os.getpid()}", cache)
    return found


def _run_ldd(binaries: list[str]) -> set[str]:
    ldd = shutil.which("ldd") or "/usr/bin/ldd"
    found: set[str] = set()
    for start in range(0, len(binaries), 64):
        done = subprocess.run([ldd, *binaries[start:start + 64]], capture_output=True,
                              text=True, timeout=120, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
        for line in done.stdout.splitlines():
            match = _LDD_PATH.search(line)
            if match and os.path.exists(match.group(1)):
                found.add(match.group(1))
    return found


def _loader_name(path: str) -> str:
    """Where the loader looks for a library it printed as `path`: the real directory
    (a merged /usr has /lib -> usr/lib) and the name it was asked for."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def _extra_runtime_libs(libs: set[str]) -> set[str]:
    """libgcc_s: glibc loads it only when a thread exits through pthread_exit."""
    dirs = {os.path.dirname(p) for p in libs if os.path.basename(p).startswith("libc.so")}
    return {os.path.join(d, "libgcc_s.so.1") for d in dirs
            if os.path.exists(os.path.join(d, "libgcc_s.so.1"))}


def _key(kind: str, files: list[tuple[str, str]]) -> str:
    digest = hashlib.sha256(kind.encode())
    for dest, source in files:
        try:
            st = os.stat(source)
        except OSError as exc:
            raise ViewError(f"cannot read {source}: {exc}") from exc
        digest.update(f"{dest}\0{source}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:20]


def _home() -> str:
    """This uid's directory on /dev/shm: ours and writable by no one else."""
    if _fstype(SHM) != _TMPFS:
        raise ViewError(f"{SHM} is not a tmpfs here")
    home = os.path.join(SHM, f"rlvr-sandbox-{os.getuid()}")
    try:
        os.mkdir(home, 0o711)
    except FileExistsError:
        pass
    st = os.lstat(home)
    if (not os.path.isdir(home) or os.path.islink(home) or st.st_uid != os.getuid()
            or st.st_mode & 0o022):
        raise ViewError(f"{home} exists but is not a directory only this user may write")
    os.chmod(home, 0o711)  # the sandbox's unprivileged uid must pass through it
    return home


_HELD: dict[str, int] = {}  # layer path -> the fd of its lock, held until we exit


def _layer(home: str, kind: str, files: list[tuple[str, str]]) -> Layer:
    """The layer holding `files` ((path inside the layer, host source)), built if no
    complete copy exists; held (shared lock) for the rest of this process."""
    path = os.path.join(home, f"{kind}-{_key(kind, files)}")
    if path in _HELD:
        return Layer(path)
    lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_SH)
    if not os.path.exists(os.path.join(path, ".complete")):
        _sweep(home, keep=path)
        _build(path, files)
    _HELD[path] = lock
    return Layer(path)


def _build(path: str, files: list[tuple[str, str]]) -> None:
    needed = sum(os.stat(source).st_size for _, source in files if os.path.isfile(source))
    space = os.statvfs(os.path.dirname(path))
    if space.f_bavail * space.f_frsize < needed * 1.1 + (64 << 20):
        raise ViewError(f"{os.path.dirname(path)} has {space.f_bavail * space.f_frsize >> 20} MB "
                        f"free, the copy needs {needed >> 20} MB")
    staging = f"{path}.build-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for dest, source in files:
            target = os.path.join(staging, dest.lstrip("/"))
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            if os.path.isdir(source):  # an empty mount point (a masked site dir)
                os.makedirs(target, mode=0o755, exist_ok=True)
            else:
                shutil.copyfile(source, target, follow_symlinks=True)
                os.chmod(target, 0o755 if os.access(source, os.X_OK) else 0o644)
        _open_dirs(staging)
        open(os.path.join(staging, ".complete"), "w").close()
        try:
            os.rename(staging, path)
        except OSError:  # another process finished the same layer first
            shutil.rmtree(staging, ignore_errors=True)
            if not os.path.exists(os.path.join(path, ".complete")):
                raise
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise ViewError(f"copying the sandbox's files to {path} failed: {exc}") from exc


def _open_dirs(root: str) -> None:
    for top, dirs, _ in os.walk(root):
        for name in dirs:
            os.chmod(os.path.join(top, name), 0o755)
    os.chmod(root, 0o755)


def _sweep(home: str, keep: str) -> None:
    """Remove the layers (and builds) no live process holds."""
    for name in os.listdir(home):
        if name.endswith(".lock") or name.startswith("ldd-"):
            continue
        path = os.path.join(home, name)
        if path == keep or path in _HELD:
            continue
        lock_path = os.path.join(home, name.split(".build-")[0] + ".lock")
        try:
            lock = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            continue
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(lock)
            continue
        try:
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(lock)


def base_files(python: str, prefix: str, sandboxed_dir: str, masked: list[str],
               home: str) -> list[tuple[str, str]]:
    """(path in the view, host source) of the interpreter, its stdlib and libraries,
    zoneinfo, rlvr's scripts (at /rlvr), and empty directories where `masked` (the
    site-packages dirs sandbox.py covers) are."""
    files = [(python, python)] + [(d, d) for d in masked]
    stdlib = []
    for root in _stdlib_dirs(prefix):
        stdlib += list(_walk(root))
    files += [(p, p) for p in dict.fromkeys(stdlib)]
    binaries = [python] + [p for p in stdlib if p.endswith(".so") and _elf(p)]
    libs = _needed(binaries, home)
    libs |= _extra_runtime_libs(libs)
    copied = {dest for dest, _ in files}
    files += sorted({(_loader_name(lib), lib) for lib in libs} - {(c, c) for c in copied})
    if os.path.isdir(ZONEINFO):
        files += [(p, p) for p in _walk(ZONEINFO, skip=False)]
    for name in sorted(os.listdir(sandboxed_dir)):
        if name.endswith(".py"):
            files.append((f"/rlvr/{name}", os.path.join(sandboxed_dir, name)))
    return files


def package_files(source: str, name: str) -> list[tuple[str, str]]:
    if os.path.isdir(source):
        return [(f"/{name}/{os.path.relpath(p, source)}", p)
                for p in _walk(source, skip=False)]
    return [(f"/{name}", source)]


@lru_cache(maxsize=16)
def view(python: str, prefix: str, sandboxed_dir: str, masked: tuple[str, ...],
         binds: tuple) -> FileView:
    """The file view for the interpreter `python` and the package binds (packages.Bind),
    or the host fallback with the reason."""
    try:
        home = _home()
        base_list = base_files(python, prefix, sandboxed_dir, list(masked), home)
        base = _layer(home, "base", base_list)
        layers = tuple(_layer(home, "pkg", package_files(b.source, b.name)) for b in binds)
        in_base = {dest for dest, _ in base_list}
        # Libraries the packages load from the system (not from their own .libs)
        sources = tuple(b.source.rstrip("/") + "/" for b in binds)
        package_elves = [source for b in binds for _, source in package_files(b.source, b.name)
                         if ".so" in os.path.basename(source) and _elf(source)]
        extra = sorted({lib for lib in _needed(package_elves, home)
                        if _loader_name(lib) not in in_base
                        and not os.path.realpath(lib).startswith(sources)})
        syslibs = (_layer(home, "syslibs", [(f"/{os.path.basename(l)}", l) for l in extra])
                   if extra else None)
    except (OSError, subprocess.SubprocessError) as exc:
        return FileView(None, (), None, f"host files (page cache shared with the host): {exc}")
    size = sum(_tree_mb(l.root) for l in (base, *layers, *([syslibs] if syslibs else [])))
    return FileView(base, layers, syslibs, f"tmpfs copies in {home} ({size} MB)")


def _tree_mb(root: str) -> int:
    total = 0
    for top, _, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(top, name)).st_size
            except OSError:
                pass
    return total >> 20


def current_python() -> tuple[str, str]:
    return os.path.realpath(sys.executable), os.path.realpath(sys.base_prefix)
