"""Answer text as values: normalise LaTeX arithmetic, read plain value literals, evaluate
arithmetic over literals exactly, and classify an answer's *form*.

Independent of the math verifier on purpose: the audit is a second opinion, so it must
not share the verifier's blind spots. It shares only the facts of notation (which
signs and commands are which operator: rlvr.mathtext). Everything here is regex and
`fractions`, no sympy, so it is cheap enough for the trainer to run every few steps.
"""

from __future__ import annotations

import ast
import re
from fractions import Fraction
from typing import Any

from rlvr.mathtext import (FRACTION_COMMANDS, THOUSANDS_MARKUP, find_boxes,
                           operators_as_ascii)

# After the four operations (rlvr.mathtext.operators_as_ascii): powers and fractions.
_OPERATOR_SPELLINGS = [
    (re.compile(r"\*\*"), "^"),
    (re.compile(r"\\(?:" + "|".join(FRACTION_COMMANDS) + r")(?![A-Za-z])"), r"\\frac"),
]
# Spacing and sizing commands that never change a value.
_NOISE = re.compile(r"\\(?:left|right|displaystyle|!|,|;|:|quad|qquad)(?![A-Za-z])|\\ |~")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")  # after THOUSANDS_MARKUP
_OPENER = re.compile(r"\$+|\\\(|\\\[")
# Units and labels that a value may carry without changing it: "$450", "x = 450",
# "450 apples", "450^\circ", "\text{ dollars}".
_LABEL = re.compile(r"^[A-Za-z](?:_\{?\w+\}?)?\s*=\s*(?!=)")
_TRAILING_UNIT = re.compile(r"(?:\s*(?:\\(?:text|mathrm|mbox)\{[^{}]*\}|\^\s*\{?\\circ\}?|"
                            r"\\%|%|\\?\$)|\s+[A-Za-z][A-Za-z ]*)\s*$")

INTEGER = re.compile(r"[+-]?\d+")
DECIMAL = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+)")
SLASH_FRACTION = re.compile(r"([+-]?)(\d+)/(\d+)")
LATEX_FRACTION = re.compile(r"([+-]?)\\frac(?:\{(\d+)\}|(\d))(?:\{(\d+)\}|(\d))")
# Two operands with a binary operator between them: the mark of an unevaluated expression.
OPERATION = re.compile(r"[\d)}]\s*[-+*/^]\s*[-+(\\{]*\s*\d|\\frac|\\sqrt|\d\s*\^")

MAX_EXPONENT = 64  # 2^64 is an answer; 10^(10^9) is a way to hang the audit
MAX_LITERAL_CHARS = 1000


def normalise(text: str) -> str:
    """Operators as ASCII (`\\times` -> `*`), no spacing commands, no thousands
    separators, no surrounding `$`, no trailing full stop; inner spaces collapsed."""
    text = THOUSANDS_MARKUP.sub("", operators_as_ascii(text.strip()))  # before `\\,` goes
    for pattern, replacement in _OPERATOR_SPELLINGS:
        text = pattern.sub(replacement, text)
    text = _NOISE.sub(" ", text)
    text = _THOUSANDS.sub("", text)
    text = text.strip().rstrip(".").strip()
    return " ".join(_unwrapped(text).split())


def _unwrapped(text: str) -> str:
    """`$x$`, `$$x$$`, `\\(x\\)`, `\\[x\\]` (a `$` run or `\\(`/`\\[` first, a `$` run or
    `\\)`/`\\]` last) -> `x`; else the text. Two scans from the ends: a regex with a
    lazy middle between two `\\s*` took 35 s on a `$` and 2000 spaces."""
    opener = _OPENER.match(text)
    if opener is None:
        return text
    if text.endswith(("\\)", "\\]")):
        close = len(text) - 2
    else:
        close = len(text.rstrip("$"))
        if close == len(text):
            return text
    if close < opener.end():  # `$$`: the two ends share the one run of dollars
        return "" if close == 0 and len(text) >= 2 else text
    return text[opener.end():close]


def compact(text: str) -> str:
    """`normalise` without any spaces: the key two spellings of one expression share."""
    return normalise(text).replace(" ", "")


def strip_decorations(text: str) -> str:
    """The bare value of `x = \\$450 \\text{ dollars}`: labels, currency, units, degrees,
    percent signs, bold, colour and `\\text{}` wrappers removed (repeatedly, they nest)."""
    text = normalise(text)
    for _ in range(4):
        before = text
        text = re.sub(r"^\\(?:textbf|mathbf|text|mathrm|boxed)\{(.*)\}$", r"\1", text).strip()
        text = re.sub(r"^\\(?:textcolor|color)\{[^{}]*\}\s*(?:\{(.*)\}$)?", r"\1", text).strip()
        text = re.sub(r"^\\?\$", "", _LABEL.sub("", text)).strip()
        if not plain_literal(text):
            text = _TRAILING_UNIT.sub("", text).strip()
        text = text.strip("*").strip()
        if text == before:
            break
    return text


def plain_literal(text: str) -> Fraction | None:
    """The value of a plain literal (`450`, `-0.5`, `1/2`, `\\frac12`, `\\frac{1}{2}`),
    else None. A fraction whose denominator divides its numerator (`\\frac{900}{2}`) is
    an unevaluated division, not a literal."""
    text = text.strip()
    if len(text) > MAX_LITERAL_CHARS:  # int() refuses past 4300 digits: no answer is one
        return None
    if INTEGER.fullmatch(text) or DECIMAL.fullmatch(text):
        return Fraction(text)
    match = SLASH_FRACTION.fullmatch(text)
    if match:
        sign, top, bottom = match.group(1), int(match.group(2)), int(match.group(3))
    else:
        match = LATEX_FRACTION.fullmatch(text)
        if not match:
            return None
        sign = match.group(1)
        top = int(match.group(2) or match.group(3))
        bottom = int(match.group(4) or match.group(5))
    if bottom == 0 or top % bottom == 0:
        return None
    value = Fraction(top, bottom)
    return -value if sign == "-" else value


def value_of_reference(reference: Any) -> Fraction | None:
    """The reference's value when it is a plain value (an int, a decimal, a fraction,
    possibly `$`-wrapped or the last `\\boxed{}` of a worked solution), else None:
    symbolic references (variables, intervals, sets, surds) have no plain value."""
    if isinstance(reference, bool):
        return None
    if isinstance(reference, int):
        return Fraction(reference)
    if isinstance(reference, float):
        return Fraction(str(reference))
    if not isinstance(reference, str):
        return None
    boxed = find_boxes(reference)
    text = strip_decorations(boxed[-1].content if boxed else reference)
    value = plain_literal(text)
    if value is None:  # a reference may itself be a whole fraction, e.g. "4/2"
        match = SLASH_FRACTION.fullmatch(text) or LATEX_FRACTION.fullmatch(text)
        if match:
            value = evaluate(text)
    return value


def evaluate(text: str) -> Fraction | None:
    """Exact value of arithmetic over number literals (`6 * 75`, `449+1`,
    `\\frac{900}{2}`, `2^6`, `\\sqrt{16}`), else None (variables, functions, huge
    powers, irrational roots, anything else)."""
    if len(text) > MAX_LITERAL_CHARS:  # no answer is that long; the parser would be
        return None  # what a hostile text measures (thousands of `(` exhaust its memory)
    source = _to_python(compact(text))
    if source is None:
        return None
    try:
        tree = ast.parse(source, mode="eval")
        return _value(tree.body)
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError, RecursionError,
            MemoryError):
        return None


def _to_python(text: str) -> str | None:
    for _ in range(20):  # innermost \frac / \sqrt first; nesting deeper than 20: give up
        replaced = re.sub(r"\\frac(?:\{([^{}]*)\}|(\d))(?:\{([^{}]*)\}|(\d))",
                          lambda m: f"(({m.group(1) or m.group(2)})/({m.group(3) or m.group(4)}))",
                          text)
        replaced = re.sub(r"\\sqrt\{([^{}]*)\}", r"sqrt(\1)", replaced)
        if replaced == text:
            break
        text = replaced
    text = text.replace("{", "(").replace("}", ")").replace("^", "**")
    if "\\" in text or not re.fullmatch(r"[\d.+\-*/()sqrt]+", text):
        return None
    return text


def _value(node: ast.AST) -> Fraction:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return Fraction(str(node.value))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _value(node.operand)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if isinstance(node.op, ast.Div):
            return left / right
        if isinstance(node.op, ast.Pow) and right.denominator == 1 \
                and abs(right) <= MAX_EXPONENT and abs(left) < 10**6:
            return left ** int(right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id == "sqrt" and len(node.args) == 1:
        return _exact_root(_value(node.args[0]))
    raise ValueError("not arithmetic over literals")


def _exact_root(value: Fraction) -> Fraction:
    import math

    if value < 0:
        raise ValueError("negative root")
    top, bottom = math.isqrt(value.numerator), math.isqrt(value.denominator)
    if top * top != value.numerator or bottom * bottom != value.denominator:
        raise ValueError("irrational root")
    return Fraction(top, bottom)


def is_operation(text: str) -> bool:
    """Whether the text applies an operator to number operands (`6 * 75`, `2^6`,
    `\\frac{900}{2}`); a lone negative number or a plain fraction literal is not one."""
    bare = strip_decorations(text)
    if plain_literal(bare) is not None:
        return False
    return bool(OPERATION.search(bare)) or evaluate(bare) is not None
