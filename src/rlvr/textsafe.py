"""Untrusted text made safe to write: one lossless escape, and a JSON line that never
fails on text.

Model text reaches verdicts (a candidate's exception message, an extracted answer) and
may hold anything a Python str can: lone surrogates (U+D800..U+DFFF, which UTF-8 cannot
encode, so a writer raises UnicodeEncodeError), control characters (NUL, ESC and the
like, which rewrite a terminal or a log viewer's screen) and line separators that
`str.splitlines` breaks a JSONL line on (U+2028, U+2029, U+0085, U+001C..U+001E).

`escape_text` maps each such character c to the six characters `\\uXXXX` (lowercase
hex of ord(c)): U+D800 becomes the text `\\ud800`, ESC becomes `\\u001b`. Tab and
newline are kept (ordinary whitespace of multi-line text; JSON escapes them itself).
A backslash that already stands before such a six-character form in the input is
itself escaped (`\\u005c`), so the input text `\\ud800` (six ASCII characters) becomes
`\\u005cud800` and never meets the escape of a real U+D800. Every other backslash is
left alone (`\\frac12`, `\\\\` in a LaTeX matrix and `\\underline` are unchanged).
The mapping is therefore injective: `unescape_text` inverts it exactly. It is not
idempotent (no injective map that changes anything can be), so it is applied exactly
once per trip: `Verdict.to_dict` escapes, `Verdict.from_dict` unescapes.

`json_line` is the writers' own defence, independent of the verdict's: JSON text whose
strings still hold such characters is written with them as JSON `\\uXXXX` escapes,
which any JSON parser reads back to the identical string.
"""

from __future__ import annotations

import json
import re
from typing import Any

# What is escaped. Tab (\x09) and newline (\x0a) are not.
_UNSAFE_CLASS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff"
_UNSAFE = re.compile(f"[{_UNSAFE_CLASS}]")
_BACKSLASH = 0x5C
# A six-character escape as `escape_text` writes it (lowercase hex).
_TOKEN = re.compile(r"\\u([0-9a-f]{4})")
# What escape_text must touch: an unsafe character, or a backslash starting a token.
_NEEDS_ESCAPE = re.compile(f"[{_UNSAFE_CLASS}]|\\\\(?=u[0-9a-f]{{4}})")


def _decodable(code: int) -> bool:
    """Whether `\\u` + this code (4 hex) is a token `unescape_text` turns back."""
    return code == _BACKSLASH or bool(_UNSAFE.match(chr(code)))


def _escape_match(match: re.Match) -> str:
    text = match.group(0)
    if text != "\\":
        return f"\\u{ord(text):04x}"
    # A backslash before `uXXXX`: escaped only when that would read back as a token.
    after = match.string[match.end() + 1:match.end() + 5]
    return "\\u005c" if _decodable(int(after, 16)) else "\\"


def escape_text(text: str) -> str:
    """`text` with lone surrogates, control characters (but tab and newline) and line
    separators written as `\\uXXXX`; see the module docstring. Injective."""
    if not _NEEDS_ESCAPE.search(text):
        return text
    return _NEEDS_ESCAPE.sub(_escape_match, text)


def _unescape_match(match: re.Match) -> str:
    code = int(match.group(1), 16)
    return chr(code) if _decodable(code) else match.group(0)


def unescape_text(text: str) -> str:
    """The inverse of `escape_text`: `unescape_text(escape_text(s)) == s` for every s."""
    if "\\u" not in text:
        return text
    return _TOKEN.sub(_unescape_match, text)


def _map_strings(value: Any, convert, depth: int = 0) -> Any:
    if depth > 200:  # verdict details are shallow; a cycle or a bomb is not walked
        return value
    if isinstance(value, str):
        return convert(value)
    if isinstance(value, dict):
        return {(convert(k) if isinstance(k, str) else k): _map_strings(v, convert, depth + 1)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_map_strings(v, convert, depth + 1) for v in value)
    return value


def escape_value(value: Any) -> Any:
    """`value` (str, or dicts/lists/tuples of them, keys included) with every string
    passed through `escape_text`; other values as they are."""
    return _map_strings(value, escape_text)


def unescape_value(value: Any) -> Any:
    """The inverse of `escape_value`."""
    return _map_strings(value, unescape_text)


def scrub_text(text: str) -> str:
    """For display-only sinks (trackers' tables): the unsafe characters as `\\uXXXX`,
    backslashes untouched. Idempotent, not injective: the record is the JSONL, never
    the display."""
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def json_line(value: Any, **kwargs: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, **kwargs)`, except that every unsafe
    character left in its strings (see `escape_text`) is written as a JSON `\\uXXXX`
    escape. Those characters only occur inside JSON strings there, so the result is
    still the same JSON value (json.loads gives back identical strings), encodes as
    UTF-8 whatever the text, and is one line for `str.splitlines` too."""
    text = json.dumps(value, ensure_ascii=False, **kwargs)
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)
