"""Split a normalised answer into its shape before any expression is parsed.

Shape decides the comparison: `\\{1,2\\}` and `1, 2` are unordered collections,
`(1,2]` and `(3, 4)` are ordered with their end brackets, `A \\cup B` is a set of
intervals, `x = 3` is a relation, `\\text{(C)}` a choice, `\\text{Evelyn}` text,
`204_5` a numeral in base 5. Splitting is done here on the string, at top-level
commas and operators, so that latex2sympy only ever sees single expressions.

Separators as datasets write them:
- a top-level `;` separates the items when there is one (`-12;-11;-10` is a list;
  `(0;-2;6)` a triple; `p=5,q=2;p=7,q=2` two labelled pairs): commas sit inside items;
- braces without a backslash holding a top-level comma are a set (`{1,2,3}` is
  `\\{1,2,3\\}`); a lone `{5}` is a group;
- `1,22` (digits, one comma, digits: no space) is either a decimal with a decimal comma
  or a list of two numbers; it is kept as a "decimal_comma" shape, whose reading the
  comparison takes from the gold (equivalence.py). `1, 22` with a space is a list, and
  `1,000` was already made one thousand by normalize.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rlvr.verifiers.math.inequality import intervals
from rlvr.verifiers.math.labels import NAME

_OPEN = "([{"
_CLOSE = ")]}"
_CHOICE = re.compile(r"^\(?\s*([A-E])\s*\)(?:\s*.*)?$|^([A-E])$")
_BASE_NUMERAL = re.compile(r"^([0-9A-Fa-f]+)_\{?(\d+)\}?$")
_TEXT_WRAPPED = re.compile(r"^\\text\s*\{([^{}]*)\}$")
_MATRIX = re.compile(r"^\\begin\{([pbvBV]?matrix|array)\}(?:\{[^{}]*\})?(.*)\\end\{\1\}$", re.S)
_SET_PREFIX = re.compile(r"^[a-zA-Z]\s*\\in\s*")
_DECIMAL_COMMA = re.compile(r"^(-?\d+),(\d+)$")
_RELATIONS = re.compile(r"\\leq?(?![a-zA-Z])|\\geq?(?![a-zA-Z])|\\[lg]t(?![a-zA-Z])|<=|>=|<|>"
                        r"|\\neq?(?![a-zA-Z])")


@dataclass(frozen=True)
class Shape:
    """A node of the answer's shape.

    kind:  "expr" (one expression, `text`), "relation" (`parts` = lhs, rhs),
           "set" (unordered), "list" (unordered: a "find all" answer), "ordered"
           (tuple or interval; `brackets` = its two end brackets), "union" (of
           ordered parts), "matrix" (`parts` = rows, each a "row" node), "choice"
           (`text` = letter), "text" (`text` = words), "base" (`text` = digits,
           `base`), "inequality" (`text`; compared as a string), "decimal_comma"
           (`text` = the decimal reading `1.22`, `parts` = the list reading), "empty".
    """

    kind: str
    text: str = ""
    parts: tuple["Shape", ...] = ()
    brackets: str = ""
    base: int = 0


def split_top_level(text: str, separator: str) -> list[str]:
    """`text` split at `separator` where no bracket or brace is open."""
    pieces, depth, start, i = [], 0, 0, 0
    while i < len(text):
        char = text[i]
        if depth == 0 and text.startswith(separator, i):
            pieces.append(text[start:i])
            start = i = i + len(separator)
            continue
        if char == "\\":
            if text[i + 1:i + 2] in ("{", "}"):  # \{ \} delimit a set
                depth += 1 if text[i + 1] == "{" else -1
            i += 2
            continue
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
        i += 1
    pieces.append(text[start:])
    return [p.strip() for p in pieces]


def _encloses(text: str) -> bool:
    """Whether the bracket opening `text` closes at its very end."""
    depth = 0
    for i, char in enumerate(text):
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth -= 1
            if depth == 0:
                return i == len(text) - 1
    return False


def _strip_text_wrappers(text: str) -> str:
    return re.sub(r"\\text\s*\{([^{}]*)\}", r"\1", text).strip()


def _choice(text: str) -> str | None:
    match = _CHOICE.match(_strip_text_wrappers(text).replace("\\textbf", ""))
    return (match.group(1) or match.group(2)) if match else None


def is_text_answer(text: str) -> bool:
    """Words, not math: `\\text{Evelyn}`, `east`, `ellipse` (three letters or more)."""
    inner = _TEXT_WRAPPED.match(text)
    if inner:
        return bool(re.search(r"[A-Za-z]", inner.group(1)))
    return bool(re.fullmatch(r"[A-Za-z]{3,}(?: [A-Za-z]+)*", text))


def split_items(text: str) -> list[str]:
    """The items of a tuple, set or list: at top-level `;` when there is one (the coarser
    separator: `p=5,q=2;p=7,q=2`), else at top-level commas. Empty items are dropped."""
    items = split_top_level(text, ";")
    if len(items) == 1:
        items = split_top_level(text, ",")
    return [item for item in items if item] or [""]


def _ordered_or_group(text: str) -> Shape:
    inner = text[1:-1].strip()
    items = split_items(inner)
    if len(items) == 1:
        if text[0] == "(" and text[-1] == ")" or _MATRIX.match(inner):
            # plain grouping parentheses; `\left[\begin{array}..\end{array}\right]`
            return parse_shape(inner)
        return Shape("ordered", brackets=text[0] + text[-1], parts=(parse_shape(inner),))
    return Shape("ordered", brackets=text[0] + text[-1], parts=tuple(parse_shape(i) for i in items))


def _matrix(body: str) -> Shape:
    rows = [r for r in split_top_level(body.strip(), "\\\\") if r.strip()]
    return Shape("matrix", parts=tuple(
        Shape("row", parts=tuple(parse_shape(cell) for cell in split_top_level(row, "&")))
        for row in rows))


def _named_values(items: list[str]) -> Shape | None:
    """`p = 3, q = 2` -> the labelled tuple `(p, q) = (3, 2)`: one value for each of
    several different names is an ordered answer (MATH's `(m,b)`, `(A,B)`), not a
    list of alternatives. `x = 1, x = -2` (one name) stays a list of solutions."""
    pairs = [split_top_level(item, "=") for item in items]
    if not all(len(p) == 2 and NAME.match(p[0]) for p in pairs):
        return None
    names = [p[0] for p in pairs]
    if len(set(names)) != len(names):
        return None
    values = Shape("ordered", brackets="()", parts=tuple(parse_shape(p[1]) for p in pairs))
    return Shape("relation", text="(" + ", ".join(names) + ")",
                 parts=(Shape("ordered", brackets="()",
                              parts=tuple(Shape("expr", n) for n in names)), values))


def _plus_minus(text: str) -> Shape | None:
    """`1 \\pm \\sqrt{19}` -> the list of its two values."""
    pieces = split_top_level(text, "\\pm")
    if len(pieces) != 2:
        pieces = split_top_level(text, "\\mp")
        if len(pieces) != 2:
            return None
    left, right = pieces
    values = [f"{left}+{right}", f"{left}-{right}"] if left else [f"+{right}", f"-{right}"]
    return Shape("list", parts=tuple(Shape("expr", v) for v in values))


def parse_shape(text: str) -> Shape:
    """The shape of a normalised answer (see `Shape`)."""
    text = text.strip()
    if not text:
        return Shape("empty")
    letter = _choice(text)
    if letter:
        return Shape("choice", letter)
    if is_text_answer(text):
        return Shape("text", " ".join(_strip_text_wrappers(text).lower().split()))
    text = _SET_PREFIX.sub("", text)
    union = split_top_level(text, "\\cup")
    if len(union) > 1:
        return Shape("union", parts=tuple(parse_shape(u) for u in union))
    matrix = _MATRIX.match(text)
    if matrix:
        return _matrix(matrix.group(2))
    if text.startswith("\\{") and text.endswith("\\}"):
        inner = text[2:-2]
        return Shape("set", parts=tuple(parse_shape(i) for i in split_items(inner) if i))
    if text[0] == "{" and _encloses(text) and len(split_items(text[1:-1])) > 1:
        return Shape("set", parts=tuple(parse_shape(i) for i in split_items(text[1:-1])))
    decimal = _DECIMAL_COMMA.match(text)
    if decimal:
        return Shape("decimal_comma", text=f"{decimal.group(1)}.{decimal.group(2)}",
                     parts=(Shape("list", parts=tuple(Shape("expr", n) for n in decimal.groups())),))
    items = split_items(text)
    if len(items) > 1:
        return _named_values(items) or Shape("list", parts=tuple(parse_shape(i) for i in items))
    if text[0] in "([" and text[-1] in ")]" and _encloses(text):
        return _ordered_or_group(text)
    if has_relation_operator(text):
        return _inequality(text)
    sides = split_top_level(text, "=")
    if len(sides) > 1:  # `text` keeps the left side as written, for labels.py
        lhs, rhs = parse_shape(sides[0]), parse_shape(sides[-1])
        if rhs.kind == "list":  # `x = \pm 3` is `x = 3, x = -3`: a list of solutions
            return Shape("list", parts=tuple(Shape("relation", text=sides[0], parts=(lhs, value))
                                             for value in rhs.parts))
        return Shape("relation", text=sides[0], parts=(lhs, rhs))
    plus_minus = _plus_minus(text)
    if plus_minus:
        return plus_minus
    base = _BASE_NUMERAL.match(text)
    if base and int(base.group(2)) != 10:
        return Shape("base", base.group(1).upper().lstrip("0") or "0", base=int(base.group(2)))
    return Shape("expr", text)


def _inequality(text: str) -> Shape:
    """`-2 \\le x < 7` -> the interval `[-2, 7)`; `|x| > 1` -> a union of two rays
    (inequality.py). Anything else (`x \\neq 3`, two unknowns) stays an "inequality"
    compared as a string."""
    found = intervals(text)
    if not found:
        return Shape("inequality", text)
    shapes = tuple(Shape("ordered", brackets=brackets, parts=(parse_shape(low), parse_shape(high)))
                   for brackets, low, high in found)
    return shapes[0] if len(shapes) == 1 else Shape("union", parts=shapes)


def has_relation_operator(text: str) -> bool:
    """`<`, `\\le`, `\\neq`, ...: inequality answers (not yet compared structurally)."""
    return bool(_RELATIONS.search(text))
