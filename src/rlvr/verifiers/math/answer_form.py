"""Is the final answer in final form? (`answer_form: value`, the default.)

Issue 14's run: SmolLM2 learned in 40 steps to box the question's own expression
(`\\boxed{6 * 75}` for "What is 6 * 75?"). Symbolic equivalence pays for that, since
`6 * 75` *equals* 450; so does math-verify. Computing the value is the task, so when the
gold is a plain value the answer must be a value too. Each rule, with its case:

Rational golds (`450`, `-5`, `0.5`, `\\frac{3}{4}`, `25\\%`): the answer must be written
as a rational literal —
    integer or decimal       `450`, `-5`, `450.0`, `.5` (thousands separators, units,
                             `$` and `\\%` were already removed by normalize.py)
    fraction                 `\\frac{3}{4}`, `\\frac34`, `3/4`, `-\\frac{3}{4}` — but not one
                             whose value is a whole number: `\\frac{900}{2}` is 900 / 2
                             left undone (issue 14). A non-integer fraction not in lowest
                             terms (`\\frac{6}{8}`) is still accepted: reducing is tidying,
                             not computing, and the prompt check catches a copied one.
    mixed number             `1\\frac{1}{2}`, `1 1/2` (proper fraction part)
    scientific notation      `4.5 \\times 10^{2}` (what `4.5e2` normalises to), `6.02 \\cdot 10^{23}`
Anything else — `6 * 75`, `449+1`, `2^6`, `\\sqrt{16}`, `\\sqrt{2}\\cdot\\sqrt{8}` — is
"unsimplified".

Irrational golds (a simple surd or pi multiple: `2\\sqrt{3}`, `\\frac{3\\pi}{4}`, `1+\\sqrt{2}`):
no operation in the answer may act on numbers alone and give a rational result:
`\\sqrt{16}\\pi` (sqrt(16) is 4), `(2+2)\\sqrt{3}`, `2^{2}\\pi` are unsimplified; `\\sqrt{12}` is
accepted (its value is irrational: pulling out the square is tidying, not computing).

Any other gold (variables, sets, tuples, intervals, matrices, `\\infty`, text) keeps
symbolic equivalence: `\\boxed{(x+1)^2}` for `x^2+2x+1` is correct.
"""

from __future__ import annotations

import re

import sympy

from rlvr.verifiers.math.expressions import parse_expression
from rlvr.verifiers.math.labels import is_label
from rlvr.verifiers.math.structure import Shape

ANSWER_FORMS = ("value", "equivalent")

_SIGN = r"[+-]?\s*"
_DECIMAL = r"(?:\d+(?:\.\d*)?|\.\d+)"
_INTEGER_OR_DECIMAL = re.compile(rf"^{_SIGN}{_DECIMAL}$")
# \frac{3}{4}, \frac34, \frac{-3}{4}, 3/4 — numerator and denominator are whole numbers
_FRACTION = re.compile(r"^(?P<sign>[+-]?)\s*(?:\\frac\s*(?:\{\s*(?P<num>[+-]?\d+)\s*\}|(?P<num1>\d))"
                       r"\s*(?:\{\s*(?P<den>\d+)\s*\}|(?P<den1>\d))"
                       r"|(?P<num2>\d+)\s*/\s*(?P<den2>\d+))$")
_MIXED = re.compile(r"^(?P<sign>[+-]?)\s*(?P<whole>\d+)\s*(?:\\frac\s*\{\s*(?P<num>\d+)\s*\}\s*"
                    r"\{\s*(?P<den>\d+)\s*\}|\\frac\s*(?P<num1>\d)(?P<den1>\d)"
                    r"|\s(?P<num2>\d+)\s*/\s*(?P<den2>\d+))$")
_SCIENTIFIC = re.compile(rf"^{_SIGN}\d(?:\.\d+)?\s*\\(?:times|cdot)\s*10\s*\^\s*(?:\{{\s*[+-]?\d+\s*\}}|\d)$")


def _fraction_parts(match: re.Match[str]) -> tuple[int, int]:
    numerator = match.group("num") or match.group("num1") or match.group("num2")
    denominator = match.group("den") or match.group("den1") or match.group("den2")
    return int(numerator), int(denominator)


def is_rational_literal(text: str) -> bool:
    """`text` (normalised) is an integer, decimal, non-whole fraction, mixed number or
    scientific-notation number: a value written out, with no arithmetic left to do."""
    text = text.strip()
    if _INTEGER_OR_DECIMAL.match(text) or _SCIENTIFIC.match(text):
        return True
    fraction = _FRACTION.match(text)
    if fraction:
        numerator, denominator = _fraction_parts(fraction)
        return denominator != 0 and numerator % denominator != 0
    mixed = _MIXED.match(text)
    if mixed:
        numerator, denominator = _fraction_parts(mixed)
        return 0 < numerator < denominator
    return False


def _undone_rational_step(tree: sympy.Basic) -> bool:
    """Some node of the parsed (unevaluated) tree operates on numbers only and gives a
    rational: arithmetic the answer left undone. Decided without evaluating anything
    large: a sum, product or integer power of rationals is rational; `b^{p/q}` is
    rational when b's q-th root is. A lone `q^{-1}` is how a denominator is stored
    (`\\frac{\\pi}{4}`), not a step."""
    for node in sympy.preorder_traversal(tree):
        if not isinstance(node, (sympy.Add, sympy.Mul, sympy.Pow)) or not node.args \
                or not all(isinstance(arg, sympy.Rational) for arg in node.args):
            continue
        if not isinstance(node, sympy.Pow):
            return True
        base, exponent = node.args
        if exponent.is_Integer:
            if exponent == -1 and base.is_Integer:
                continue
            return True
        if base.is_positive and base.p < 10**60 and base.q < 10**60 and \
                sympy.Pow(base, sympy.Rational(1, exponent.q)).is_Rational:
            return True  # `\\sqrt{16}`, `8^{2/3}`
    return False


def _numeric_value(text: str) -> sympy.Basic | None:
    parsed = parse_expression(text)
    if parsed is None or parsed.value is None or not isinstance(parsed.value, sympy.Expr):
        return None
    value = parsed.value
    return value if value.is_number and not value.has(sympy.zoo, sympy.oo, sympy.nan) else None


_NAMED = re.compile(r"^[A-Za-z](?:_\{?\w+\}?)?$")


def gold_value_kind(shape: Shape) -> str | None:
    """"rational" or "irrational" when the gold is a plain value written in final form
    (`x = 5`, and a labelled value such as `|AB| = 1` or `A:B = 1` (labels.py), counts as
    its value, so `\\frac{3}{3}` stays unsimplified for it; `2x - y + 1 = 0` is an
    equation, not a value), else
    None (symbolic: equivalence applies)."""
    if shape.kind == "relation" and shape.parts[1].kind == "expr" \
            and (_NAMED.match(shape.parts[0].text) or is_label(shape.text, shape.parts[1])):
        shape = shape.parts[1]
    if shape.kind != "expr":
        return None
    if is_rational_literal(shape.text):
        return "rational"
    value = _numeric_value(shape.text)
    if value is None or value.is_rational or not value.is_real:
        return None  # complex, or a gold itself written unsimplified: equivalence
    parsed = parse_expression(shape.text)
    return None if parsed is None or _undone_rational_step(parsed.tree) else "irrational"


def _value_side(answer: Shape) -> Shape:
    """`x = 450` is judged by its right side; any other shape as it is."""
    if answer.kind == "relation" and answer.parts[1].kind == "expr":
        return answer.parts[1]
    return answer


def in_value_form(answer: Shape, gold_kind: str) -> bool:
    """The answer (shape of the normalised answer) is a value in final form for a gold
    of `gold_kind` (see the module docstring). `x = 450` is judged by its right side."""
    answer = _value_side(answer)
    if answer.kind != "expr":
        return True  # a set, tuple, text, ...: not a value, and the comparison says so
    if is_rational_literal(answer.text):
        return True
    if gold_kind == "rational":
        return False
    parsed = parse_expression(answer.text)
    return parsed is None or not _undone_rational_step(parsed.tree)


def names_a_number(answer: Shape) -> bool:
    """An answer that failed `in_value_form` is "unsimplified" when it is a number
    written as an expression (`6 * 75`, `9^{9^9}`) or equals the gold (`\\sin^2x+\\cos^2x`
    for 1, decided by the caller); other text the grammar reads as symbols ("ANSWER")
    is just wrong, and text it cannot read is unparseable."""
    answer = _value_side(answer)
    parsed = parse_expression(answer.text) if answer.kind == "expr" else None
    return parsed is not None and not parsed.tree.free_symbols
