"""The one reader of JSON Lines files: run logs (metrics, evals, rollouts), eval samples
and dataset files. It streams: a line at a time, so a 1 GB rollouts.jsonl costs one
line of memory.

What a malformed line means depends on who reads, so each caller names its policy:

    on_bad="raise"  every malformed line is an error naming the file and line: files a
                    person wrote or downloaded (a dataset, eval samples), where a torn
                    last line is as wrong as any other
    on_bad="tail"   a malformed *last* line without a newline after it ends the read
                    quietly (`torn_tail` is set): that is what a run killed mid-write
                    leaves. A malformed line anywhere else is an error naming it:
                    resume and audit must not lose or undercount lines silently
    on_bad="skip"   malformed lines are skipped and counted (`bad_lines`, `torn_tail`):
                    a viewer of a live run shows what it can and says what it skipped

Lines split on b"\\n" only: str.splitlines would also break on U+2028 and friends, which
an older writer left raw inside JSON strings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator, Literal

from rlvr.errors import UserError

OnBad = Literal["raise", "tail", "skip"]
POLICIES = ("raise", "tail", "skip")


class JsonlError(UserError, ValueError):
    """A malformed line where the caller's policy does not allow one; the message names
    the file and line. `path` and `line` say the same for a caller that rewords it."""

    def __init__(self, path: Path, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path, self.line, self.problem = path, line, problem


class JsonlLines:
    """Iterate (line number, record) over a JSONL file under one policy; after (or
    during) the iteration `bad_lines` and `torn_tail` say what was skipped.

    `objects`: a line that is valid JSON but not an object is malformed too (run logs);
    False yields any JSON value (dataset rows, checked by their own reader).
    `missing_ok`: a missing file reads as empty instead of raising FileNotFoundError.
    `raw`: yield (number, record, the line's bytes) so a rewriter can copy lines exactly.
    """

    def __init__(self, path: str | Path, on_bad: OnBad, *, objects: bool = True,
                 missing_ok: bool = False, raw: bool = False) -> None:
        if on_bad not in POLICIES:
            raise ValueError(f"on_bad must be one of {POLICIES}, got {on_bad!r}")
        self.path, self.on_bad, self.objects = Path(path), on_bad, objects
        self.missing_ok, self.raw = missing_ok, raw
        self.bad_lines: list[int] = []   # 1-based numbers of skipped lines (policy "skip")
        self.torn_tail = False           # a malformed unterminated last line was left out

    def __iter__(self) -> Iterator[Any]:
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            if self.missing_ok:
                return
            raise
        with handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                record, problem = parse_line(line, self.objects)
                if problem is None:
                    yield (number, record, line) if self.raw else (number, record)
                    continue
                self._bad(number, problem, terminated=line.endswith(b"\n"))

    def _bad(self, number: int, problem: str, terminated: bool) -> None:
        if not terminated and self.on_bad != "raise":
            self.torn_tail = True  # the last line: nothing follows it
        elif self.on_bad == "skip":
            self.bad_lines.append(number)
        else:
            raise JsonlError(self.path, number, problem)


def read_jsonl(path: str | Path, on_bad: OnBad, *, objects: bool = True,
               missing_ok: bool = False) -> JsonlLines:
    """(line number, record) for each non-blank line of `path`, streamed; see the
    module's docstring for the policies. Keep the returned object to read `bad_lines`
    and `torn_tail` after iterating it."""
    return JsonlLines(path, on_bad, objects=objects, missing_ok=missing_ok)


def parse_line(line: bytes | str, objects: bool = True) -> tuple[Any, str | None]:
    """(record, None) or (None, what is wrong with the line): the one parse every
    reader shares (also the view's random-access reader of rollouts.jsonl)."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        return None, f"malformed JSON: {exc.msg} (column {exc.colno})"
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    if objects and not isinstance(record, dict):
        return None, f"expected a JSON object, got {type(record).__name__}"
    return record, None
