"""Left sides of `=` that only name the value: a labelled answer is its value.

MATH writes "Thus, $(m,b) = \\boxed{(\\frac32, -13)}$" and models box `(p,q)=(3,2)`,
`|AB| = 1`, `m\\angle ABC = 30^\\circ`, `[ABC] = 24` or `\\mathbf{M} = \\begin{pmatrix}
...`; the gold is the value alone (or the other way round). A label is a name, never
arithmetic: `2+3 = 5` is no label, and a tuple of names must have as many names as the
tuple on the right has values (`(p,q) = (3,2,1)` is no label). Single symbols, `a_n`,
`f(x)` and `P(3)` are handled in equivalence.py.

A ratio or quotient of names is a label too: olympiad golds write `S_{MBCN}:S=7:32`,
`V_{1}:V_{2}=11:21`, `A:B=1` and `\\frac{NO}{BO}=\\frac{1}{\\sqrt{6}}` for "find the ratio";
the answer `7:32` (or `\\frac{1}{\\sqrt{6}}`) is the value. Each side must be a name: a
letter with an optional subscript, or up to four capitals (a segment `NO`, a figure
`MBCN`); `2:3 = 4:6` and `\\frac{x+1}{y} = 2` are no labels. The ratio `7:32` itself is
the number 7/32 to the grammar (expressions.py), so `7 : 32`, `14:64` and
`\\frac{7}{32}` all equal it, as any two ratios do when their quotients are equal.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # structure.py imports this module
    from rlvr.verifiers.math.structure import Shape

_NAME = r"[A-Za-z](?:_\{?\w+\}?)?'*"  # x, a_5, x_{1}, x'
_TUPLE_OF_NAMES = re.compile(rf"^\(\s*({_NAME}(?:\s*,\s*{_NAME})+)\s*\)$")
_FIGURE_NAMES = re.compile(
    r"^(?:"
    r"\|?\s*(?:\\overline\s*\{\s*[A-Z]{2}\s*\}|[A-Z]{2})\s*\|?"  # AB, |AB|, \overline{AB}
    r"|(?:m\s*)?\\angle\s*\{?[A-Z]{1,3}\}?"  # \angle A, m\angle ABC
    r"|\[\s*[A-Z]{3,6}\s*\]"  # [ABC]: the area of ABC
    r"|\\(?:text|vec)\s*\{\s*[A-Za-z]\s*\}(?:_\{?\w+\}?)?"  # \mathbf{v} (normalised), \vec{v}
    r")$")
# one side of a ratio or quotient: `S`, `S_{MBCN}`, `V_1`, `NO`, `MBCN`
_RATIO_SIDE = r"(?:[A-Za-z]|[A-Z]{2,4})(?:_\{?\w+\}?)?'*"
_RATIO_OF_NAMES = re.compile(
    rf"^(?:{_RATIO_SIDE}\s*:\s*{_RATIO_SIDE}|\\frac\s*\{{\s*{_RATIO_SIDE}\s*\}}\s*\{{\s*{_RATIO_SIDE}\s*\}})$")
NAME = re.compile(rf"^{_NAME}$")


def tuple_names(text: str) -> list[str] | None:
    """`(p, q)` -> ["p", "q"]; None when `text` is not a tuple of distinct names."""
    match = _TUPLE_OF_NAMES.match(text.strip())
    if not match:
        return None
    names = ["".join(n.split()) for n in match.group(1).split(",")]
    return names if len(set(names)) == len(names) else None


def is_label(lhs_text: str, rhs: Shape) -> bool:
    """Whether `lhs_text = rhs` only names the value `rhs` (see the module docstring)."""
    text = lhs_text.strip()
    if _FIGURE_NAMES.match(text) or _RATIO_OF_NAMES.match(text):
        return True
    names = tuple_names(text)
    return names is not None and rhs.kind == "ordered" and rhs.brackets == "()" \
        and len(rhs.parts) == len(names)


def values_by_name(relation: Shape) -> dict[str, Shape] | None:
    """`(q, p) = (2, 3)` -> {"q": 2, "p": 3}; None unless a labelled tuple."""
    names = tuple_names(relation.text)
    rhs = relation.parts[1]
    if names is None or not is_label(relation.text, rhs):
        return None
    return dict(zip(names, rhs.parts))
