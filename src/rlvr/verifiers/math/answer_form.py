"""Is the final answer in final form? (`answer_form: value`, the default.)

The math red-team run (bench_redteam.py): SmolLM2 learned in 40 steps to box the question's own expression
(`\\boxed{6 * 75}` for "What is 6 * 75?"). Symbolic equivalence pays for that, since
`6 * 75` *equals* 450; so does math-verify. Computing the value is the task, so the
rule is one principle, judged on the answer's structure rather than on a list of shapes:

    An answer whose numeric sub-expressions still evaluate is "unsimplified", unless
    the gold has that same form.

"Still evaluates" is decided by tree_form.py: the answer's tree as written, and the
tree after sympy evaluates every sub-expression without free symbols (constant
folding), are compared modulo order, grouping, neutral elements and spelling, where the
spelling of a surd is free: `\\sqrt{12}` and `2\\sqrt3`, `\\frac{1}{\\sqrt2}` and
`\\frac{\\sqrt2}{2}` are one irrational number written two ways (extracting a square or
rationalising is tidying, not computing), while `\\sqrt{16}` is the rational 4 left
unevaluated. So
`6 \\cdot 75\\pi`, `\\pi\\times6\\times6`, `\\frac43\\pi\\cdot27`, `2\\pi-\\pi`,
`135\\cdot\\frac{\\pi}{180}`, `\\sin\\frac{\\pi}{3}`, `\\sqrt{16}\\pi`, `\\log_2 8` and `5!`
fold (to 450pi, 36pi, 36pi, pi, 3pi/4, sqrt(3)/2, 4pi, 3, 120) and are unsimplified;
`450\\pi`, `\\frac{3\\pi}{4}`, `\\frac{\\sqrt3}{2}`, `1+\\sqrt2`, `\\frac{1+\\sqrt5}{2}`, `\\ln 2`,
`\\pi^2`, `0.75\\pi`, `\\sqrt{8}`, `\\frac{1}{\\sqrt3}` do not and are final. A fraction of
integers not in lowest terms folds (`\\frac{6}{8}` is `\\frac34`), and so does a
whole-valued one (`\\frac{900}{2}`); so does a product of surds (`\\sqrt2\\sqrt3` is
`\\sqrt6`). The grammar itself divides integer literals while parsing, so those
divisions are read from the text (`_folded_division`).

"Unless the gold has that same form": a gold that itself leaves a numeric
sub-expression to evaluate (`\\frac{1}{2^{99}}`, `2^{10}`, `\\sqrt{4 \\cdot 2}`) did not ask for
final form: any equal answer is paid (`2^{-99}`, `1024`).

Rational golds (`450`, `-5`, `0.5`, `\\frac{3}{4}`, `25\\%`): the answer must be written
as a rational literal —
    integer or decimal       `450`, `-5`, `450.0`, `.5` (thousands separators, units,
                             `$` and `\\%` were already removed by normalize.py)
    fraction in lowest terms `\\frac{3}{4}`, `\\frac34`, `3/4`, `-\\frac{3}{4}`, the ratio `3:4`
    mixed number             `1\\frac{1}{2}`, `1 1/2` (proper fraction part)
    repeating decimal        `0.\\overline{3}` (normalize.py writes it as its fraction)
    scientific notation      `4.5 \\times 10^{2}` (what `4.5e2` normalises to), `6.02 \\cdot 10^{23}`
`6 * 75`, `449+1`, `2^6`, `\\sqrt{16}`, `\\sqrt{2}\\cdot\\sqrt{8}`, `450 \\cdot 1` are unsimplified.

Irrational golds (`2\\sqrt{3}`, `\\frac{3\\pi}{4}`, `450\\pi`, `\\frac{\\sqrt3}{2}`): the answer
must not still evaluate (above), must have no free symbols (`36\\pi+\\sin^2x+\\cos^2x-1`
for 36pi is an identity left unsimplified) and no function the gold does not apply
(`450\\pi\\sin^2 1+450\\pi\\cos^2 1`: sympy's folding does not see that identity).

Any other gold (variables, sets, tuples, intervals, matrices, `\\infty`, text) keeps
symbolic equivalence, but the principle applies to the numbers inside: `x^2+2x+1` and
`(x+1)^2` are paid for `x^2+2x+1`, `x^2 + (1+1)x + 1` and `2 \\cdot 3x` are
unsimplified, unless the gold itself is written with a numeric sub-expression left to
evaluate.
"""

from __future__ import annotations

import math
import re

import sympy

from rlvr.verifiers.math.expressions import parse_expression, parse_tree
from rlvr.verifiers.math.labels import is_label
from rlvr.verifiers.math.structure import Shape
from rlvr.verifiers.math.tree_form import still_evaluates

ANSWER_FORMS = ("value", "equivalent")

_SIGN = r"[+-]?\s*"
_DECIMAL = r"(?:\d+(?:\.\d*)?|\.\d+)"
_INTEGER_OR_DECIMAL = re.compile(rf"^{_SIGN}{_DECIMAL}$")
# \frac{3}{4}, \frac34, \frac{-3}{4}, 3/4, 3:4 — numerator and denominator are whole numbers
_FRACTION = re.compile(r"^(?P<sign>[+-]?)\s*(?:\\frac\s*(?:\{\s*(?P<num>[+-]?\d+)\s*\}|(?P<num1>\d))"
                       r"\s*(?:\{\s*(?P<den>\d+)\s*\}|(?P<den1>\d))"
                       r"|(?P<num2>\d+)\s*/\s*(?P<den2>\d+)|(?P<num3>\d+)\s*:\s*(?P<den3>\d+))$")
_MIXED = re.compile(r"^(?P<sign>[+-]?)\s*(?P<whole>\d+)\s*(?:\\frac\s*\{\s*(?P<num>\d+)\s*\}\s*"
                    r"\{\s*(?P<den>\d+)\s*\}|\\frac\s*(?P<num1>\d)(?P<den1>\d)"
                    r"|\s(?P<num2>\d+)\s*/\s*(?P<den2>\d+))$")
_SCIENTIFIC = re.compile(rf"^{_SIGN}\d(?:\.\d+)?\s*\\(?:times|cdot)\s*10\s*\^\s*(?:\{{\s*[+-]?\d+\s*\}}|\d)$")


def _fraction_parts(match: re.Match[str]) -> tuple[int, int]:
    groups = match.groupdict()
    numerator = groups["num"] or groups["num1"] or groups["num2"] or groups.get("num3")
    denominator = groups["den"] or groups["den1"] or groups["den2"] or groups.get("den3")
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
        return denominator > 1 and math.gcd(numerator, denominator) == 1
    mixed = _MIXED.match(text)
    if mixed:
        numerator, denominator = _fraction_parts(mixed)
        return 0 < numerator < denominator and math.gcd(numerator, denominator) == 1
    return False


# Divisions of two integer literals, which the grammar computes while parsing
# (`\frac{900}{2}` reaches sympy as 450): read from the text instead.
_INTEGER = r"(-?\s*\d+)"
_DIVISIONS = (
    re.compile(rf"\\frac\s*\{{\s*{_INTEGER}\s*\}}\s*\{{\s*{_INTEGER}\s*\}}"),
    re.compile(r"\\frac\s*(\d)\s*(\d)"),
    re.compile(rf"(?<![\w.}})^]){_INTEGER}\s*/\s*{_INTEGER}(?![\w.^])"),
)
_DIVISION_SIGN = re.compile(r"\d\s*\\div(?![a-zA-Z])|\\div\s*\d")
_DOUBLE_MINUS = re.compile(r"-\s*\(?\s*-")
# Other operations on numbers the grammar evaluates while parsing: `\binom{9}{2}` and
# `{9 \choose 2}` arrive as 36, `\gcd(4, 6)` as 2, `\Gamma(5)` as 24, `e^{\ln 36}` as 36.
_NUMBER_ARGUMENT = r"\s*[({]\s*-?[\d.]+\s*[)}]"
_EVALUATED_WHILE_PARSING = re.compile(
    rf"\\[dt]?binom{_NUMBER_ARGUMENT}|\d\s*\\choose(?![a-zA-Z])"
    rf"|\\(?:gcd|lcm|Gamma)(?![a-zA-Z])\s*\(\s*[\d.,\s]+\)"
    r"|\\operatorname\s*\{\s*(?:gcd|lcm)\s*\}|e\s*\^\s*\{?\s*\\(?:ln|log)(?![a-zA-Z])"
    r"|\\exp\s*\(?\s*\\(?:ln|log)(?![a-zA-Z])")


def _folded_division(text: str) -> bool:
    """Arithmetic the grammar does while parsing, read from the text: a division of
    integer literals that is not a fraction in lowest terms (`\\frac{900}{2}`,
    `\\frac{6}{8}`, `\\frac{36}{1}`, `6/-8`), a division sign between numbers
    (`3 \\div 4`), a double negation (`--3`), or `_EVALUATED_WHILE_PARSING`."""
    if _DIVISION_SIGN.search(text) or _DOUBLE_MINUS.search(text) \
            or _EVALUATED_WHILE_PARSING.search(text):
        return True
    for pattern in _DIVISIONS:
        for match in pattern.finditer(text):
            numerator, denominator = (int(g.replace(" ", "")) for g in match.groups())
            if denominator <= 1 or math.gcd(numerator, denominator) != 1:
                return True
    return False


def _numeric_value(text: str) -> sympy.Basic | None:
    parsed = parse_expression(text)
    if parsed is None or parsed.value is None or not isinstance(parsed.value, sympy.Expr):
        return None
    value = parsed.value
    return value if value.is_number and not value.has(sympy.zoo, sympy.oo, sympy.nan) else None


_NAMED = re.compile(r"^[A-Za-z](?:_\{?\w+\}?)?$")


def gold_value_kind(shape: Shape) -> str | None:
    """"rational" or "irrational" when the gold is a plain real number (`x = 5`, and a
    labelled value such as `|AB| = 1` or `A:B = 1` (labels.py), counts as its value, so
    `\\frac{3}{3}` stays unsimplified for it; `2x - y + 1 = 0` is an equation, not a
    value), else None (symbolic: equivalence applies, to numbers in final form)."""
    if shape.kind == "relation" and shape.parts[1].kind == "expr" \
            and (_NAMED.match(shape.parts[0].text) or is_label(shape.text, shape.parts[1])):
        shape = shape.parts[1]
    if shape.kind != "expr":
        return None
    if is_rational_literal(shape.text):
        return "rational"
    value = _numeric_value(shape.text)
    if value is None or not value.is_real:
        return None  # symbolic or complex
    return "rational" if value.is_rational else "irrational"


def _value_side(answer: Shape) -> Shape:
    """`x = 450` is judged by its right side; any other shape as it is."""
    if answer.kind == "relation" and answer.parts[1].kind == "expr":
        return answer.parts[1]
    return answer


def expression_final(text: str) -> bool:
    """One expression has no numeric sub-expression left to evaluate (module docstring).
    Text the grammar cannot read is not judged here (the comparison decides)."""
    if is_rational_literal(text):
        return True
    if _folded_division(text):
        return False
    # decimals as exact fractions (`0.75` is 3/4, `\\sqrt{10.5}` the root of 21/2): a
    # decimal literal is a value, and the grammar reduces the fraction it becomes
    parsed = parse_expression(text)
    try:
        return parsed is None or not still_evaluates(parsed.tree)
    except Exception:  # an odd sympy object: its form is not judged, its value still is
        return True


def in_value_form(answer: Shape, gold_kind: str, gold: Shape | None = None) -> bool:
    """The answer (shape of the normalised answer) is a value in final form for a gold
    of `gold_kind` (see the module docstring). `x = 450` is judged by its right side."""
    answer = _value_side(answer)
    if answer.kind != "expr" or is_rational_literal(answer.text):
        return True
    gold_value = _value_side(gold) if gold is not None else None
    if gold_value is not None and gold_value.kind == "expr" and not is_rational_literal(
            gold_value.text) and not expression_final(gold_value.text):
        return True  # the gold itself leaves work (`\\frac{1}{2^{99}}`): equivalence
    if gold_kind == "rational":
        return False
    tree = parse_tree(answer.text)
    if tree is not None and (tree.free_symbols or _functions(tree) - _functions(
            parse_tree(gold_value.text) if gold_value is not None else None)):
        return False  # `36\\pi+\\sin^2x+\\cos^2x-1`, `\\sin^2 1+\\cos^2 1`: identities left
    return expression_final(answer.text)


def _functions(tree: sympy.Basic | None) -> set[type]:
    """The functions a tree applies (`\\sin`, `\\log`, ...): a value in final form for a
    gold without them has none (the folding cannot see `\\sin^2 1 + \\cos^2 1` is 1)."""
    if tree is None:
        return set()
    return {type(f) for f in tree.atoms(sympy.Function)}


def _expr_leaves(shape: Shape) -> list[str]:
    if shape.kind == "expr":
        return [shape.text]
    return [text for part in shape.parts for text in _expr_leaves(part)]


def symbols_in_final_form(answer: Shape, gold: Shape) -> bool:
    """For a symbolic gold: no number in the answer is left to evaluate, unless the gold
    itself leaves one (then its writer did not ask for final form)."""
    if all(expression_final(text) for text in _expr_leaves(answer)):
        return True
    return not all(expression_final(text) for text in _expr_leaves(gold))


def names_a_number(answer: Shape) -> bool:
    """An answer that failed `in_value_form` is "unsimplified" when it is a number
    written as an expression (`6 * 75`, `9^{9^9}`) or equals the gold (`\\sin^2x+\\cos^2x`
    for 1, decided by the caller); other text the grammar reads as symbols ("ANSWER")
    is just wrong, and text it cannot read is unparseable."""
    answer = _value_side(answer)
    parsed = parse_expression(answer.text) if answer.kind == "expr" else None
    return parsed is not None and not parsed.tree.free_symbols
