"""The math spans of a text (`$..$`, `$$..$$`, `\\(..\\)`, `\\[..\\]`), found in one
left-to-right pass: linear in the text's length, whatever it holds.

Why not one regex: a lazy `\\[(.+?)\\]` retried at every `\\[` of a text with no `\\]`
scans to the end each time (60 KB of `\\[` took 22 s). Here a delimiter that found no
closing once is never searched for again, and `$` scans stop at the next `$`.

Why the whole text and not a window over its end: a window that starts inside a span
pairs every later `$` the wrong way round (a 114 KB honest completion lost its closing
`$34$`). The pass is linear, so no window is needed.

Rules, as LaTeX writers use them:
- `$$..$$` and `\\[..\\]` may run over lines; `$..$` and `\\(..\\)` stay on one line
  (a `$` opening on one line and closing lines later is two stray dollars);
- outside math, `\\$` is a literal dollar sign, not a delimiter;
- a `$` before a number that reads as money is no delimiter either: `$18 a day, or
  $126 a week` is two amounts, not the formula `18 a day, or `. It is money when the
  text up to the next `$` ends in a space or holds two plain words in a row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """One math span: delimiters at [start, end), its content at [inner_start, inner_end)."""

    start: int
    end: int
    inner_start: int
    inner_end: int

    def content(self, text: str) -> str:
        return text[self.inner_start:self.inner_end]


_DELIMITER_START = re.compile(r"[\\$]")  # only `\\` and `$` can open a span
_TWO_WORDS = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{1,}\s+[A-Za-z]{2,}")


def _dollar_close(text: str, start: int, display: bool) -> int | None:
    """Index of the `$` closing the content that begins at `start` (escapes skipped),
    or None: a span holds no `$`, and inline math no newline."""
    i, n = start, len(text)
    while i < n:
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == "$":
            if not display:
                return i if i > start else None
            return i if text.startswith("$$", i) and i > start else None
        if char == "\n" and not display:
            return None
        i += 1
    return None


def is_money(text: str, dollar: int, close: int | None) -> bool:
    """Whether the `$` at `dollar` is a currency sign (see the module docstring)."""
    if not text[dollar + 1:dollar + 2].isdigit():
        return False
    if close is None:
        return True
    inner = text[dollar + 1:close]
    return inner[-1:].isspace() or _TWO_WORDS.search(inner) is not None


def math_spans(text: str) -> list[Span]:
    """Every math span of `text`, in order (see the module docstring)."""
    spans: list[Span] = []
    no_bracket_close = False  # a `\[` search reached the end: no later `\[` can close
    paren_fail_line_end = -1  # a `\(` found no `\)` before this line's end
    i, n = 0, len(text)
    while i < n:
        jump = _DELIMITER_START.search(text, i)
        if jump is None:
            break
        i = jump.start()
        char = text[i]
        if char == "\\":
            following = text[i + 1:i + 2]
            if following == "[" and not no_bracket_close:
                close = text.find("\\]", i + 2)
                if close < 0:
                    no_bracket_close = True
                elif close > i + 2:
                    spans.append(Span(i, close + 2, i + 2, close))
                    i = close + 2
                    continue
            elif following == "(" and i >= paren_fail_line_end:
                line_end = text.find("\n", i)
                line_end = n if line_end < 0 else line_end
                close = text.find("\\)", i + 2, line_end)
                if close < 0:
                    paren_fail_line_end = line_end
                elif close > i + 2:
                    spans.append(Span(i, close + 2, i + 2, close))
                    i = close + 2
                    continue
            i += 2  # an escaped character outside math: `\$` is a literal dollar
            continue
        if char == "$":
            if text.startswith("$$", i):
                close = _dollar_close(text, i + 2, display=True)
                if close is not None:
                    spans.append(Span(i, close + 2, i + 2, close))
                    i = close + 2
                    continue
            else:  # each scan stops at the next `$`: no character is scanned twice over
                close = _dollar_close(text, i + 1, display=False)
                if close is not None and not is_money(text, i, close):
                    spans.append(Span(i, close + 1, i + 1, close))
                    i = close + 1
                    continue
            i += 1
    return spans
