"""An inequality in one unknown as the intervals it describes.

`-2 \\le x < 7` is `[-2, 7)`, `x > 5` is `(5, \\infty)` and `5 < x` the same, so an
answer in interval notation meets a gold written as an inequality (MATH-500's
`x \\in [-2,7]`) and the other way round. The unknown may be a letter, a subscripted
letter or a function value: `0 < f(x) < 1` is the range `(0, 1)`. Also:

- a negated unknown flips the inequality: `-x > -1` is `x < 1`;
- an absolute value of the unknown splits it, when its bounds are non-negative numbers
  written out (`1`, `0.5`, `\\frac{3}{2}`): `|x| > 1` is `(-\\infty, -1) \\cup (1, \\infty)`,
  `|x| \\le 2` is `[-2, 2]`, and `1 \\le |z| \\le \\frac{3}{2}` is
  `[-\\frac{3}{2}, -1] \\cup [1, \\frac{3}{2}]`. A bound that is not a plain number
  (`|x| > a`) could be negative, so it stays a string, as do chains that turn round
  (`1 < x > 3`). With two letters the unknown is the later one in the alphabet (`x > a`
  and `a < x` are x in `(a, \\infty)`; `b < a` and `a > b` are one relation), or the
  middle one of a chain (`a < x < b`);
- `x \\neq 3` (`\\ne`, `≠`) is the union `(-\\infty, 3) \\cup (3, \\infty)`.
"""

from __future__ import annotations

import re

Interval = tuple[str, str, str]  # (brackets such as "[)", low end, high end)

_LESS = {"<": "<", "\\lt": "<", "\\le": "<=", "\\leq": "<=", "<=": "<=",
         ">": ">", "\\gt": ">", "\\ge": ">=", "\\geq": ">=", ">=": ">="}
_COMPARISON = re.compile(r"\\leq?(?![a-zA-Z])|\\geq?(?![a-zA-Z])|\\[lg]t(?![a-zA-Z])|<=|>=|<|>")
_UNKNOWN = r"[a-zA-Z](?:_\{?\w+\}?)?(?:\(\s*[a-zA-Z]\s*\))?"  # x, x_1, f(x)
_PLAIN = re.compile(rf"^{_UNKNOWN}$")
_NEGATED = re.compile(rf"^-\s*{_UNKNOWN}$")
_ABSOLUTE = re.compile(rf"^\|\s*{_UNKNOWN}\s*\|$")
_NONNEGATIVE = re.compile(r"^(?:\d+(?:\.\d+)?|\\frac\s*\{\s*\d+\s*\}\s*\{\s*\d+\s*\})$")
_INFINITY = "\\infty"


def _role(term: str) -> str | None:
    """"plain", "negated" or "absolute" when `term` is the unknown, else None."""
    for role, pattern in (("plain", _PLAIN), ("negated", _NEGATED), ("absolute", _ABSOLUTE)):
        if pattern.match(term):
            return role
    return None


def _negate(term: str) -> str:
    if term.startswith("-"):
        return term[1:].strip()
    return "-" + term if re.fullmatch(r"[\w.\\{}]+", term) else f"-({term})"


def _brackets(low_closed: bool, high_closed: bool) -> str:
    return ("[" if low_closed else "(") + ("]" if high_closed else ")")


def _between(low: str, high: str, closed: tuple[bool, bool], role: str) -> list[Interval] | None:
    """`low < u < high` (each `<` closed or not) for the unknown `u` in `role`."""
    if role == "plain":
        return [(_brackets(*closed), low, high)]
    if role == "negated":  # low < -x < high  is  -high < x < -low
        return [(_brackets(closed[1], closed[0]), _negate(high), _negate(low))]
    if not (_NONNEGATIVE.match(low) and _NONNEGATIVE.match(high)):
        return None
    return [(_brackets(closed[1], closed[0]), _negate(high), _negate(low)),
            (_brackets(*closed), low, high)]


def _above(bound: str, closed: bool, role: str) -> list[Interval] | None:
    """`u > bound` (or `u \\ge bound`) for the unknown `u` in `role`."""
    if role == "plain":
        return [(_brackets(closed, False), bound, _INFINITY)]
    if role == "negated":  # -x > b  is  x < -b
        return [(_brackets(False, closed), "-" + _INFINITY, _negate(bound))]
    if not _NONNEGATIVE.match(bound):
        return None
    return [(_brackets(False, closed), "-" + _INFINITY, _negate(bound)),
            (_brackets(closed, False), bound, _INFINITY)]


def _below(bound: str, closed: bool, role: str) -> list[Interval] | None:
    """`u < bound` (or `u \\le bound`) for the unknown `u` in `role`."""
    if role == "plain":
        return [(_brackets(False, closed), "-" + _INFINITY, bound)]
    if role == "negated":  # -x < b  is  x > -b
        return [(_brackets(closed, False), _negate(bound), _INFINITY)]
    if not _NONNEGATIVE.match(bound):
        return None
    return [(_brackets(closed, closed), _negate(bound), bound)]


def _unknown(roles: list[str | None], terms: list[str]) -> int | None:
    """Which term is the unknown: the middle one of a chain (its ends may be letters:
    `a < x < b`); of two terms the one that can be, a plain letter before a negated one
    (`-a < x` is `(-a, \\infty)`), of two plain letters the later in the alphabet
    (`x > a` and `a < x`: x in `(a, \\infty)`), so that a relation reads the same from
    either side (`b < a` is `a > b`). An absolute value beside another letter
    (`|x| > a`) is left alone."""
    if len(roles) == 3:
        return 1
    if roles[0] and roles[1]:
        if "absolute" in roles:
            return None
        if roles[0] != roles[1]:
            return 1 if roles[0] == "negated" else 0
        return 0 if terms[0] >= terms[1] else 1
    return 0 if roles[0] else 1


_NOT_EQUAL = re.compile(r"\\neq?(?![a-zA-Z])")


def _excluded_point(text: str) -> list[Interval] | None:
    """`x \\neq 3` (or `3 \\neq x`) -> `(-\\infty, 3) \\cup (3, \\infty)`."""
    terms = [t.strip() for t in _NOT_EQUAL.split(text)]
    if len(terms) != 2 or not all(terms):
        return None
    roles = [_role(term) for term in terms]
    unknown = _unknown(roles, terms)
    if unknown is None or roles[unknown] != "plain":
        return None
    point = terms[1 - unknown]
    return [("()", "-" + _INFINITY, point), ("()", point, _INFINITY)]


def intervals(text: str) -> list[Interval] | None:
    """The intervals (a union when several) that the inequality `text` describes, or
    None when it is not one this module reads (see the module docstring)."""
    if _NOT_EQUAL.search(text):
        return _excluded_point(text)
    operators = [_LESS[m.group()] for m in _COMPARISON.finditer(text)]
    terms = [t.strip() for t in _COMPARISON.split(text)]
    if not 2 <= len(terms) <= 3 or not all(terms):
        return None
    roles = [_role(term) for term in terms]
    unknown = _unknown(roles, terms)
    if unknown is None:
        return None
    if all(op[0] == ">" for op in operators):  # `7 > x > -2` is `-2 < x < 7`
        terms.reverse()
        roles.reverse()
        operators = [op.replace(">", "<") for op in reversed(operators)]
        unknown = len(terms) - 1 - unknown
    if any(op[0] == ">" for op in operators) or not roles[unknown]:
        return None  # `1 < x > 3` turns round
    closed = [op.endswith("=") for op in operators]
    if len(terms) == 3:
        return _between(terms[0], terms[2], (closed[0], closed[1]), roles[1])
    if unknown == 0:
        return _below(terms[1], closed[0], roles[0])
    return _above(terms[0], closed[0], roles[1])
