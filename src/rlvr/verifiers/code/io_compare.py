"""Comparing a program's stdout with the expected output, token by token."""

from __future__ import annotations

import math


def _as_float(token: str) -> float | None:
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def outputs_match(actual: str, expected: str, float_tolerance: float | None = None) -> bool:
    """True when both have the same whitespace-separated tokens (so trailing spaces,
    blank lines and CRLF do not matter). With `float_tolerance`, two tokens that both
    parse as finite numbers also match when they differ by at most that much, absolute
    or relative (the usual competitive-programming rule)."""
    got, want = actual.split(), expected.split()
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if g == w:
            continue
        if float_tolerance is None:
            return False
        g_num, w_num = _as_float(g), _as_float(w)
        if g_num is None or w_num is None:
            return False
        if abs(g_num - w_num) > float_tolerance * max(1.0, abs(w_num)):
            return False
    return True
