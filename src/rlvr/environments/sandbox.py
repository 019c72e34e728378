"""Running a model's snippet in the code verifier's sandbox (docs/CODE_SANDBOX.md) and
reading what it prints, for tools: the same isolation as grading (bubblewrap, a fresh
process per run, rlimits, seccomp, no network), through its program runner.

A snippet runs as a program with an empty stdin; its stdout comes back, capped. An
uncaught exception's traceback is printed to stdout too (the sandbox keeps no stderr),
from the snippet's own frames on: the runner's wrapper is not shown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from rlvr.verifiers.code.packages import check_names, resolve
from rlvr.verifiers.code.runner import Zygote, run_program
from rlvr.verifiers.code.sandbox import UNSAFE, Limits, probe

MAX_TIMEOUT_S = 30.0
SNIPPET_NAME = "<snippet>"

# The program the sandbox runs: the snippet, compiled under its own name, in a fresh
# namespace; a failure's traceback on stdout without the wrapper's frame.
_WRAPPER = """\
import sys as _sys, traceback as _traceback
_sys.stderr = _sys.stdout
try:
    exec(compile({source!r}, {name!r}, "exec"), {{"__name__": "__main__"}})
except SystemExit:
    raise
except BaseException as _error:
    _traceback.print_exception(type(_error), _error, _error.__traceback__.tb_next)
    _sys.exit(1)
"""


def check_packages(packages: tuple[str, ...]) -> None:
    """ValueError starting "packages:" when a listed distribution cannot be shown in the
    sandbox (not installed, no importable files): at config time, not mid-run."""
    try:
        resolve(check_names(list(packages)))
    except ValueError as exc:  # PackageError
        raise ValueError(f"packages: {exc}") from None


@dataclass(frozen=True)
class SnippetResult:
    """What one run printed (decoded, not yet sanitised) and how it ended."""

    output: str
    exit_code: int | None  # None: killed (time limit or output cap)
    timed_out: bool = False
    truncated: bool = False


class SnippetRunner(Protocol):
    def run(self, code: str) -> SnippetResult: ...

    def close(self) -> None: ...


class SandboxSnippetRunner:
    """A warm candidate sandbox of its own, started on the first run and released by
    close(). sandbox: "bwrap" or "none-unsafe" (the operator's choice, trusted code
    only); timeout_s and memory_mb per run; packages the snippet may import (none: the
    standard library); output_cap: bytes of stdout kept."""

    def __init__(self, sandbox: str = "bwrap", timeout_s: float = 5.0, memory_mb: int = 512,
                 packages: tuple[str, ...] = (), output_cap: int = 4096) -> None:
        if sandbox not in ("bwrap", UNSAFE):
            raise ValueError(f"sandbox must be 'bwrap' or {UNSAFE!r}, got {sandbox!r}")
        if not 0 < timeout_s <= MAX_TIMEOUT_S:
            raise ValueError(f"timeout_s must be in (0, {MAX_TIMEOUT_S}], got {timeout_s!r}")
        self.mode, self.timeout_s, self.memory_mb = sandbox, float(timeout_s), int(memory_mb)
        self.output_cap = int(output_cap)
        self._binds = resolve(check_names(list(packages)))
        self._names = [b.name for b in self._binds if b.name.isidentifier()]
        if self.mode == "bwrap":
            probe()  # refuse now, with the reason (cached after the first call)
        self._zygote: Zygote | None = None

    def run(self, code: str) -> SnippetResult:
        if self._zygote is None:
            self._zygote = Zygote(self.mode, Limits().tmpfs_mb, self._binds, "never")
        limits = Limits(cpu_s=math.ceil(self.timeout_s) + 1, memory_mb=self.memory_mb,
                        check_memory_mb=2 * self.memory_mb)
        program = _WRAPPER.format(source=code, name=SNIPPET_NAME)
        wants = any(name in code for name in self._names)
        run = run_program(self._zygote, program, b"", limits, self.timeout_s,
                          self.output_cap, wants)
        return SnippetResult(run.stdout.decode("utf-8", errors="replace"), run.exit_code,
                             run.timed_out, run.overflowed)

    def close(self) -> None:
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None
