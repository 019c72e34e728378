"""Which installed packages the sandbox may import, and which host files that takes.

The sandbox hides every site-packages directory (sandbox.py), so by itself only the
standard library is importable. A configured list of distributions (numpy by default)
is made visible again, read-only: each listed distribution and the distributions it
requires (recursively, without extras), and nothing else. What a distribution is made
of is read from its own installed-files record (RECORD), never guessed from paths:
numpy, for one, ships its compiled BLAS in a sibling `numpy.libs` directory that its
extension modules find relative to themselves, so both must appear side by side.

Each top-level entry (a package directory, a module file, a sibling `.libs`
directory) is bound read-only under `PACKAGES_MOUNT` inside the sandbox, which is put
on the sandbox's `sys.path`. Nothing else of the host's site-packages - torch, rlvr,
datasets shipped inside packages - is reachable, because its directory is not there.

A listed distribution that is not installed is a `PackageError` naming it, raised when
the verifier is built, before anything is graded: a missing numpy must not turn every
numpy solution into a silent 0.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from typing import Any

DEFAULT_PACKAGES = ("numpy",)
PACKAGES_MOUNT = "/packages"  # inside the sandbox; on its sys.path after the stdlib
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_MODULE_FILE = re.compile(r"\.(py|so|pyd)$")
_NOT_IMPORTABLE = ("__pycache__",)
# Thread pools of numerical libraries start one thread per host core at import, which
# the sandbox's process limit (RLIMIT_NPROC, 8) would refuse and its CPU limit is not
# sized for: one thread each.
THREAD_ENV = {name: "1" for name in (
    "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS", "GOTO_NUM_THREADS")}


class PackageError(ValueError):
    """A configured package cannot be made importable in the sandbox."""


@dataclass(frozen=True)
class Bind:
    """One host file or directory, shown read-only at PACKAGES_MOUNT/<name>."""

    source: str       # real host path
    name: str         # top-level name inside PACKAGES_MOUNT
    distribution: str


def check_names(value: Any) -> tuple[str, ...]:
    """The `packages` option as a tuple of names; PackageError naming the field if it
    is not a list of distribution names."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise PackageError(f"code: option 'packages' must be a list of package names, "
                           f"got {value!r}")
    for item in value:
        if not isinstance(item, str) or not _NAME.fullmatch(item) or item != item.strip():
            raise PackageError(f"code: option 'packages' holds {item!r}, which is not a "
                               "package name")
    return tuple(dict.fromkeys(value))  # order kept, duplicates dropped


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _find(name: str) -> metadata.Distribution:
    """The installed distribution `name` (a distribution or an import name)."""
    try:
        return metadata.distribution(name)
    except metadata.PackageNotFoundError:
        pass
    owners = metadata.packages_distributions().get(name, [])
    if owners:
        return metadata.distribution(owners[0])
    raise PackageError(f"code: option 'packages' lists {name!r}, which is not installed "
                       f"on this host (pip install {name}); the sandbox can only show "
                       "installed packages")


def _requirements(dist: metadata.Distribution) -> list[str]:
    """Names of the distributions `dist` needs here: no extras, markers evaluated when
    `packaging` is importable (else kept; those not installed are skipped anyway)."""
    names = []
    for line in dist.requires or []:
        requirement, _, marker = line.partition(";")
        if "extra" in marker:
            continue
        if marker.strip() and not _marker_holds(marker):
            continue
        match = _NAME.match(requirement)
        if match:
            names.append(match.group(1))
    return names


def _marker_holds(marker: str) -> bool:
    try:
        from packaging.markers import Marker
    except ImportError:
        return True
    try:
        return Marker(marker.strip()).evaluate()
    except Exception:  # an unparsable marker: keep the dependency (if it is installed)
        return True


def _top_level(dist: metadata.Distribution) -> list[Bind]:
    """The importable top-level entries `dist` installed, from its RECORD."""
    label = dist.metadata["Name"]
    if dist.files is None:
        raise PackageError(f"code: package {label!r} has no record of its installed "
                           "files, so the sandbox cannot tell what to show")
    names = set()
    for path in dist.files:
        head = path.parts[0] if path.parts else ""
        if (head in ("", "..") or head.endswith((".dist-info", ".egg-info"))
                or head in _NOT_IMPORTABLE):
            continue
        if len(path.parts) > 1 or _MODULE_FILE.search(head):
            names.add(head)
    binds = []
    for name in sorted(names):
        source = os.path.realpath(str(dist.locate_file(name)))
        if os.path.exists(source):
            binds.append(Bind(source, name, label))
    if not binds:
        raise PackageError(f"code: package {label!r} installs no importable files here "
                           "(an editable install?), so the sandbox cannot show it")
    return binds


@lru_cache(maxsize=32)
def resolve(names: tuple[str, ...]) -> tuple[Bind, ...]:
    """Every bind the listed distributions and their dependencies need, sorted by name.
    PackageError if a listed one is missing or two claim the same top-level name."""
    pending = [_find(name) for name in names]
    seen: set[str] = set()
    binds: dict[str, Bind] = {}
    while pending:
        dist = pending.pop()
        key = _canonical(dist.metadata["Name"])
        if key in seen:
            continue
        seen.add(key)
        for bind in _top_level(dist):
            other = binds.get(bind.name)
            if other is not None and other.source != bind.source:
                raise PackageError(f"code: packages {other.distribution!r} and "
                                   f"{bind.distribution!r} both install {bind.name!r}")
            binds[bind.name] = bind
        for requirement in _requirements(dist):
            try:
                pending.append(metadata.distribution(requirement))
            except metadata.PackageNotFoundError:
                continue  # not needed on this platform, or the host never installed it
    return tuple(binds[name] for name in sorted(binds))


def search_dirs(binds: tuple[Bind, ...]) -> list[str]:
    """Unsafe mode (no sandbox): the host directories holding the binds, for sys.path."""
    return sorted({os.path.dirname(bind.source) for bind in binds})
