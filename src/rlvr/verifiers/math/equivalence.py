"""Exact comparison of an answer's shape with the gold's.

Numbers compare exactly (rationals, radicals, pi as a symbol); expressions by symbolic
simplification of their difference, never by numeric sampling with a tolerance. Sets
and "find all" lists must match element for element (not any-pair: `1` is not
`1, 2, 3`; an item written twice counts once when the gold repeats none); tuples,
intervals and matrices in order, with interval ends respected. A ratio `7:32` is the
number 7/32 (the grammar reads `:` as division), so `7 : 32`, `14:64` and `\\frac{7}{32}`
equal it. `1,22` (a "decimal_comma" shape) is read as the gold calls for.
"""

from __future__ import annotations

import re
from fractions import Fraction

import sympy

from rlvr.verifiers.math.expressions import Parsed, parse_expression
from rlvr.verifiers.math.labels import is_label, tuple_names, values_by_name
from rlvr.verifiers.math.safety import MAX_NODES, node_count
from rlvr.verifiers.math.structure import Shape

ORDERED_KINDS = ("ordered", "matrix", "row")
_NAMED_LHS = re.compile(r"^[A-Za-z](?:_\{?\w+\}?)?(?:\^\{?-1\}?)?\s*(?:\(\s*[\w\s,+\-]*\))?$")
COLLECTION_KINDS = ("set", "list")


_PLAIN_NUMBER = re.compile(r"^(-?)\s*(?:(\d+(?:\.\d*)?|\.\d+)|\\frac\{(\d+)\}\{(\d+)\}|(\d+)\s*/\s*(\d+))$")


def plain_number(text: str) -> Fraction | None:
    """`-12`, `0.25`, `.5`, `\\frac{3}{4}`, `3/4` as an exact Fraction; else None."""
    match = _PLAIN_NUMBER.match(text.strip())
    if not match or len(text) > 100:
        return None
    sign, decimal, numerator, denominator = -1 if match.group(1) else 1, match.group(2), \
        match.group(3) or match.group(5), match.group(4) or match.group(6)
    if decimal is not None:
        return sign * Fraction(decimal)
    if int(denominator) == 0:
        return None
    return sign * Fraction(int(numerator), int(denominator))


# Generic points, one per symbol: rationals unlikely to be roots, zeros or poles.
_SAMPLE_VALUES = [sympy.Rational(p, q) for p, q in ((7, 13), (11, 17), (19, 23), (29, 31),
                                                    (37, 41), (43, 47), (53, 59), (61, 67))]


def _at_sample_point(expr: sympy.Basic) -> sympy.Basic:
    """`expr` with each free symbol replaced by a fixed generic rational. A difference
    that is non-zero there is not identically zero, so the answer is wrong."""
    symbols = sorted(expr.free_symbols, key=lambda s: s.name)
    if len(symbols) > len(_SAMPLE_VALUES):
        return sympy.Integer(0)  # "not decided": the exact checks run
    return expr.subs(dict(zip(symbols, _SAMPLE_VALUES)))


def _clearly_nonzero(constant: sympy.Basic) -> bool:
    """A constant whose 50-digit value is far from 0 is not 0. Numeric evaluation only
    ever proves inequality here, never equality, so it adds no tolerance: values
    closer than 1e-30 (1/2^99 - 1/2^98 ~ 1.6e-30) go on to exact simplification."""
    try:
        magnitude = sympy.Abs(constant.evalf(50)).evalf(50)  # complex values too
        return bool(magnitude.is_Number and magnitude.is_finite
                    and magnitude > sympy.Float("1e-30", 50))
    except Exception:  # nan, zoo, a sympy corner: not decided here
        return False


def _is_zero(difference: sympy.Basic) -> bool:
    if difference == 0:
        return True
    if difference.is_Number:
        return False
    if node_count(difference) > MAX_NODES // 2:
        return False
    if _clearly_nonzero(_at_sample_point(difference)):
        return False  # pi - 157/50, tan x - cot x: settled fast instead of a slow simplify
    # cheap rewrites first; trigsimp settles trig identities several times faster
    # than the general simplify, which is the last resort
    has_trig = difference.has(sympy.sin, sympy.cos, sympy.tan, sympy.cot, sympy.sec, sympy.csc)
    simplifiers = (sympy.expand, sympy.radsimp) + ((sympy.trigsimp,) if has_trig else ()) \
        + (sympy.simplify,)
    for simplifier in simplifiers:
        try:
            if simplifier(difference) == 0:
                return True
        except Exception:  # sympy raises many types on odd input; "not shown equal"
            continue
    return False


def values_equal(answer: Parsed, gold: Parsed,
                 percent_scale: tuple[sympy.Rational, ...] = (sympy.Integer(1),)) -> bool:
    """`answer` equals `gold` exactly, allowing answer*scale for each percent scale."""
    if answer.value is None or gold.value is None:
        # a huge power or factorial: equal only when written the same way
        return answer.tree == gold.tree
    a, g = answer.value, gold.value
    if not isinstance(a, sympy.Expr) or not isinstance(g, sympy.Expr):
        return a == g
    for scale in percent_scale:
        candidate = a * scale if scale != 1 else a
        try:
            if _is_zero(candidate - g):
                return True
        except (TypeError, ValueError):
            continue
    return False


def _line_equal(answer: tuple[Parsed, Parsed], gold: tuple[Parsed, Parsed]) -> bool:
    """`y = 2x + 1` and `2x - y + 1 = 0`: lhs - rhs differ by a nonzero constant."""
    if any(p.value is None or not isinstance(p.value, sympy.Expr) for p in (*answer, *gold)):
        return False
    a = answer[0].value - answer[1].value
    g = gold[0].value - gold[1].value
    if a == 0 or g == 0:
        return a == g
    try:
        ratio = sympy.cancel(a / g)  # canonical for polynomials: constant iff proportional
        if ratio.free_symbols and not (a.is_polynomial() and g.is_polynomial()):
            ratio = sympy.simplify(ratio)
    except Exception:
        return False
    return ratio.is_number and ratio != 0 and bool(ratio.is_finite)


def _column(shape: Shape) -> tuple[Shape, ...] | None:
    if shape.kind == "matrix" and len(shape.parts) > 1 and all(len(r.parts) == 1 for r in shape.parts):
        return tuple(row.parts[0] for row in shape.parts)
    return None


def _column_and_tuple(answer: Shape, gold: Shape) -> tuple[tuple[Shape, ...], ...] | None:
    """A column vector and a tuple of the same length, as (answer items, gold items):
    MATH's `\\begin{pmatrix} -2 \\\\ -14 \\\\ -7 \\end{pmatrix}` is the vector
    `(-2, -14, -7)`. A row vector is a 1 x n matrix, not this; a gold pair `(1, 2)` may
    be an open interval, so only a gold of three or more entries takes a column."""
    def items(shape: Shape) -> tuple[Shape, ...] | None:
        if shape.kind == "ordered" and shape.brackets == "()" and len(shape.parts) > 1:
            return shape.parts
        return _column(shape)
    if {answer.kind, gold.kind} != {"matrix", "ordered"}:
        return None
    answer_items, gold_items = items(answer), items(gold)
    if answer_items is None or gold_items is None or len(answer_items) != len(gold_items) \
            or (gold.kind == "ordered" and len(gold_items) < 3):
        return None
    return answer_items, gold_items


# Words that only say what kind of thing the text answer is: "an ellipse" is
# `\text{ellipse}`, "even function" is `\text{even}`. Never "not", "or", names.
_FILLER_WORDS = frozenset({"a", "an", "the", "function", "curve", "conic", "section"})


def _words(text: str) -> list[str]:
    words = [w for w in text.split() if w not in _FILLER_WORDS]
    return words or text.split()


def _read_decimal_comma(answer: Shape, gold: Shape) -> tuple[Shape, Shape]:
    """`1,22` read as the other side calls for: a list of 1 and 22 against a list or set
    (`\\{1, 22\\}`), else the decimal 1.22. Against a single value the list reading
    could only ever be "several values", so the decimal reading takes nothing from the
    hedging checks; `1, 22` (with a space) is a list and never a decimal."""
    def reading(shape: Shape, other: Shape) -> Shape:
        if shape.kind != "decimal_comma":
            return shape
        return shape.parts[0] if other.kind in COLLECTION_KINDS else Shape("expr", shape.text)
    return reading(answer, gold), reading(gold, answer)


def flat_items(shape: Shape) -> list[Shape]:
    """The values of a collection; `\\{1 \\pm \\sqrt5, -2\\}` has three."""
    if shape.kind not in COLLECTION_KINDS:
        return [shape]
    return [item for part in shape.parts for item in flat_items(part)]


def _without_repeats(answer_items: list[Shape], gold_items: list[Shape]) -> list[Shape]:
    """The answer's items with repeats dropped, when the gold repeats none: a set written
    with an item twice is the same set (`(3,17,3,7)` listed twice among the solutions of
    a "find all" question). Repeats are items of the same shape, written the same way up
    to spaces. A gold that repeats an item (roots with multiplicity, `1, 1, 2`) is
    matched one for one."""
    if len(answer_items) <= len(gold_items) or len(set(gold_items)) < len(gold_items):
        return answer_items
    return list(dict.fromkeys(answer_items))


class Comparer:
    """Compares shapes; `percent_scale` carries the percent rule for the top value."""

    def __init__(self, percent_scale: tuple[sympy.Rational, ...] = (sympy.Integer(1),)) -> None:
        self.percent_scale = percent_scale

    def equal(self, answer: Shape, gold: Shape) -> bool:
        if "decimal_comma" in (answer.kind, gold.kind):
            return self.equal(*_read_decimal_comma(answer, gold))
        if gold.kind == "relation":
            return self._relation(answer, gold)
        if answer.kind == "relation":
            # `x = 3` answers gold `3`: the value after a single-symbol left side counts
            return self._symbol_lhs(answer) and self.equal(answer.parts[1], gold)
        if gold.kind in COLLECTION_KINDS or answer.kind in COLLECTION_KINDS:
            return self._collection(answer, gold)
        vector = _column_and_tuple(answer, gold)
        if vector:
            return all(self.equal(a, g) for a, g in zip(*vector))
        if answer.kind != gold.kind:
            return False
        if gold.kind == "expr":
            return self._expr(answer.text, gold.text)
        if gold.kind in ORDERED_KINDS:
            return answer.brackets == gold.brackets and len(answer.parts) == len(gold.parts) \
                and all(self.equal(a, g) for a, g in zip(answer.parts, gold.parts))
        if gold.kind == "union":
            return self._matching(list(answer.parts), list(gold.parts))
        if gold.kind == "base":
            return answer.text == gold.text and answer.base == gold.base
        if gold.kind == "inequality":
            return "".join(answer.text.split()) == "".join(gold.text.split())
        if gold.kind == "text":
            return _words(answer.text) == _words(gold.text)
        return answer.text == gold.text  # choice

    def _expr(self, answer_text: str, gold_text: str) -> bool:
        same_text = "".join(answer_text.split()) == "".join(gold_text.split())
        if same_text and self.percent_scale == (1,):  # `0.5\%` is not the text `0.5`
            return True
        answer_number, gold_number = plain_number(answer_text), plain_number(gold_text)
        if answer_number is not None and gold_number is not None:
            # the common case (GSM8K, AIME): exact rationals without the grammar
            return any(answer_number * Fraction(int(s.p), int(s.q)) == gold_number
                       for s in self.percent_scale)
        answer, gold = parse_expression(answer_text), parse_expression(gold_text)
        if answer is None or gold is None:
            return False
        return values_equal(answer, gold, self.percent_scale)

    def _symbol_lhs(self, relation: Shape) -> bool:
        lhs = relation.parts[0]
        if is_label(relation.text, relation.parts[1]):  # `(p,q) =`, `|AB| =`, `[ABC] =`
            return True
        # `f(x) =`, `P(3) =`, `a_n =`, `a_5 =` (which alone would read as base 5)
        if _NAMED_LHS.match(relation.text.strip()):
            return True
        if lhs.kind != "expr":
            return False
        parsed = parse_expression(lhs.text)
        return parsed is not None and isinstance(parsed.tree, sympy.Symbol)

    def _relation(self, answer: Shape, gold: Shape) -> bool:
        if answer.kind == "list" and values_by_name(gold) is not None:
            # gold `k = 45, n = 2` (or `(k, n) = (45, 2)`), answer `45, 2`: the values
            # in the gold's order (the verifier decides whether a list may answer it)
            values = gold.parts[1].parts
            return len(answer.parts) == len(values) \
                and all(self.equal(a, g) for a, g in zip(answer.parts, values))
        if answer.kind != "relation":
            # gold `x = 5`, answer `5`
            return self._symbol_lhs(gold) and self.equal(answer, gold.parts[1])
        if self._symbol_lhs(gold) and self.equal(answer.parts[0], gold.parts[0]) \
                and self.equal(answer.parts[1], gold.parts[1]):
            return True
        if self._same_names(answer, gold) or self._both_labelled(answer, gold):
            return True
        if not all(p.kind == "expr" for p in (*answer.parts, *gold.parts)):
            return False
        parsed = [parse_expression(p.text) for p in (*answer.parts, *gold.parts)]
        if any(p is None for p in parsed):
            return False
        return _line_equal((parsed[0], parsed[1]), (parsed[2], parsed[3]))

    def _both_labelled(self, answer: Shape, gold: Shape) -> bool:
        """`AB = 1` answers `|AB| = 1`: two labels that only name a value (labels.py)
        compare by the value, as the bare value `1` would. Not tuples of names, where
        the names say which value is which (`_same_names`)."""
        return all(is_label(s.text, s.parts[1]) and tuple_names(s.text) is None
                   for s in (answer, gold)) and self.equal(answer.parts[1], gold.parts[1])

    def _same_names(self, answer: Shape, gold: Shape) -> bool:
        """`(q,p) = (2,3)` answers `(p,q) = (3,2)`: the same value for every name."""
        answer_values, gold_values = values_by_name(answer), values_by_name(gold)
        if answer_values is None or gold_values is None or answer_values.keys() != gold_values.keys():
            return False
        return all(self.equal(answer_values[n], gold_values[n]) for n in gold_values)

    def _collection(self, answer: Shape, gold: Shape) -> bool:
        return self._matching(_without_repeats(flat_items(answer), flat_items(gold)),
                              flat_items(gold))

    def _matching(self, answer_items: list[Shape], gold_items: list[Shape]) -> bool:
        """A one-to-one matching of every answer item to a gold item (greedy is enough:
        equality is transitive, so an item equal to two gold items makes them equal)."""
        if len(answer_items) != len(gold_items):
            return False
        unmatched = list(gold_items)
        for item in answer_items:
            for index, candidate in enumerate(unmatched):
                if self.equal(item, candidate):
                    del unmatched[index]
                    break
            else:
                return False
        return True
