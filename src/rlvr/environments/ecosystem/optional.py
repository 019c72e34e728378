"""The ecosystem's packages are optional extras: each is imported where it is used, and a
missing one is a clear error naming the extra that installs it."""

from __future__ import annotations

import importlib
from types import ModuleType

from rlvr.errors import UserError


class MissingExtra(UserError, ImportError):
    """An optional package this feature needs is not installed (the message says how)."""


def require(module: str, extra: str, feature: str) -> ModuleType:
    """`module` imported, or MissingExtra naming `pip install 'rlvr[extra]'`."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(f"{feature} needs the {module.split('.')[0]!r} package: "
                           f"pip install 'rlvr[{extra}]' ({exc})") from None
