"""Random access to a run's rollouts.jsonl by step, without reading the whole file.

The trainer appends one step's attempts at a time and a resume rewrites the file without
the steps after its checkpoint (rlvr.runs.rundir), so the lines are sorted by step. A
step's lines are found by bisecting on byte offsets: seek, skip to the next line start,
read that line's step. A 1 GB file needs ~30 short reads per step, so `rlvr view` opens
it at once and loads a step when the page asks for it.

What a crash leaves is reported, not raised: an unterminated last line (a kill
mid-write) is `partial_tail`; a line that is not JSON in the middle of a step becomes
a `LineProblem` in that step's result.
"""

from __future__ import annotations

import mmap
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.runs.jsonl import parse_line

READ_BLOCK = 1 << 16   # bytes read per probe; a longer line is read on in further blocks
END = float("inf")     # the "step" past the last complete line


@dataclass
class LineProblem:
    offset: int        # byte offset of the line in the file
    message: str


@dataclass
class StepLines:
    step: int
    records: list[dict[str, Any]] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)


class RolloutsFile:
    """One rollouts.jsonl, re-statted on every call so a growing file (a live run) is
    followed; a file replaced by a resume (a new inode) or shrunk drops the cache."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._identity: tuple[int, int] | None = None   # (device, inode) the cache is for
        self._starts: dict[int, int] = {}                # step -> offset of its first line

    # --- the file as it is now ---------------------------------------------------------

    def exists(self) -> bool:
        return self.path.is_file()

    def size(self) -> int:
        return self.path.stat().st_size if self.exists() else 0

    def complete_size(self) -> int:
        """Bytes up to and including the last newline: the part a reader can trust."""
        size = self.size()
        if size == 0:
            return 0
        with open(self.path, "rb") as handle:
            return _after_last_newline(handle, size)

    def partial_tail(self) -> int:
        """Bytes after the last newline (a line cut by a crash mid-write); 0 when none."""
        return self.size() - self.complete_size()

    # --- by step -----------------------------------------------------------------------

    def read_step(self, step: int) -> StepLines:
        """Every line of `step`, in file order (none when the step is not there)."""
        result = StepLines(step)
        if not self.exists():
            return result
        self._check_identity()
        end = self.complete_size()
        with open(self.path, "rb") as handle:
            start = self._first_line_at_or_after(handle, step, end)
            for offset, line in _lines_from(handle, start, end):
                record, problem = _parse(line, offset)
                if problem is not None:
                    result.problems.append(problem)
                    continue
                line_step = _step_of(record)
                if line_step is None or line_step < step:
                    continue
                if line_step > step:
                    break
                result.records.append(record)
        return result

    def first_and_last_step(self) -> tuple[int, int] | None:
        """The steps of the first and last complete lines (None: no complete line)."""
        end = self.complete_size()
        if end == 0:
            return None
        with open(self.path, "rb") as handle:
            first = _first_step_from(handle, 0, end)
            last = None
            position = end
            while last is None and position > 0:  # walk back over malformed lines
                position = _line_start_before(handle, position)
                last = _first_step_from(handle, position, end, limit_lines=1)
        if first is None or last is None:
            return None
        return first, last

    def find(self, needle: str, limit: int = 500,
             deadline: float | None = None) -> Iterator[dict[str, Any]]:
        """Records whose line contains `needle` (the JSON text of a value, as the trainer
        wrote it), scanning the whole file with mmap's C search: a prompt followed across
        every step of a 1 GB run costs one pass over the file. An empty needle finds
        nothing; the scan stops at `limit` records or at the monotonic `deadline`."""
        end = self.complete_size()
        key = needle.encode("utf-8")
        if end == 0 or not key:
            return
        found = 0
        with open(self.path, "rb") as handle, \
                mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            position = 0
            # position < end: mmap.find returns `end`, not -1, for an empty key past it
            while found < limit and position < end:
                if deadline is not None and time.monotonic() > deadline:
                    return
                hit = data.find(key, position, end)
                if hit < 0:
                    return
                start = data.rfind(b"\n", 0, hit) + 1
                stop = data.find(b"\n", hit, end)
                stop = end if stop < 0 else stop
                record, _ = _parse(data[start:stop], start)
                position = stop + 1
                if record is not None:
                    found += 1
                    yield record

    # --- bisection ---------------------------------------------------------------------

    def _check_identity(self) -> None:
        stat = self.path.stat()
        identity = (stat.st_dev, stat.st_ino)
        if identity != self._identity or any(o >= stat.st_size for o in self._starts.values()):
            self._identity, self._starts = identity, {}

    def _first_line_at_or_after(self, handle: Any, step: int, end: int) -> int:
        """Offset of the first line whose step is >= `step` (bisection on bytes: the step
        of "the first line starting at or after byte p" never decreases with p)."""
        if step in self._starts:
            return self._starts[step]
        low, high = 0, end
        while low < high:
            middle = (low + high) // 2
            start = _next_line_start(handle, middle, end)
            found = _first_step_from(handle, start, end, limit_lines=64)
            if found is not None and found >= step:
                high = middle
            else:
                low = middle + 1
        start = _next_line_start(handle, low, end)
        self._starts[step] = start
        return start


def _next_line_start(handle: Any, position: int, end: int) -> int:
    """`position` if a line starts there, else the offset after the next newline."""
    if position <= 0:
        return 0
    handle.seek(position - 1)
    while position - 1 < end:
        block = handle.read(READ_BLOCK)
        if not block:
            return end
        cut = block.find(b"\n")
        if cut >= 0:
            return min(end, position + cut)
        position += len(block)
    return end


def _line_start_before(handle: Any, position: int) -> int:
    """Start of the line that ends just before `position` (a line start)."""
    return _after_last_newline(handle, position - 1)  # skip the newline ending that line


def _after_last_newline(handle: Any, end: int) -> int:
    """The offset just after the last newline in bytes [0, end); 0 when there is none.
    Reads backwards a block at a time, so only the tail of a big file is touched."""
    while end > 0:
        start = max(0, end - READ_BLOCK)
        handle.seek(start)
        cut = handle.read(end - start).rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


def _lines_from(handle: Any, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """(offset, line without its newline) for each complete line in [start, end)."""
    handle.seek(start)
    offset = start
    while offset < end:
        line = handle.readline()
        if not line:
            return
        yield offset, line.rstrip(b"\n")
        offset += len(line)


def _first_step_from(handle: Any, start: int, end: int, limit_lines: int = 1 << 30) -> float | None:
    """The step of the first parseable line in [start, end); END when the range is empty;
    None when `limit_lines` lines were all unreadable."""
    for count, (offset, line) in enumerate(_lines_from(handle, start, end)):
        if count >= limit_lines:
            return None
        record, _ = _parse(line, offset)
        step = _step_of(record) if record is not None else None
        if step is not None:
            return step
    return END


def _parse(line: bytes, offset: int) -> tuple[dict[str, Any] | None, LineProblem | None]:
    # the shared parse of rlvr.runs.jsonl; lines here are found by byte offset, not number
    record, problem = parse_line(line)
    if problem is not None:
        return None, LineProblem(offset, f"byte {offset}: {problem}")
    return record, None


def _step_of(record: dict[str, Any] | None) -> int | None:
    step = (record or {}).get("step")
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def file_identity(path: Path) -> tuple[int, int, int] | None:
    """(device, inode, size) or None: what a poller compares to see a file change."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    return stat.st_dev, stat.st_ino, stat.st_size
