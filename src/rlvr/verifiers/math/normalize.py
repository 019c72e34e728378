"""String normalisation of an extracted answer, before any parsing.

Only rewrites that cannot change the value: unicode symbols to LaTeX, spacing macros,
thousands separators (`1,000`, `1{,}000`, `1\\,000`, `1 000`), `\\dfrac` and `\\cfrac`,
units in `\\text{}`, degrees, dollar signs. Percent is recorded as a flag rather than
dropped, because `25\\%` may stand for 25 or for 0.25 depending on the gold (see
equivalence.py). `\\frac` written in a Python string without `r""` arrives as a form
feed and `rac`: the control characters that no answer contains (form feed, backspace,
bell, vertical tab) are put back as `\\f`, `\\b`, `\\a`, `\\v`. (A reference escaped twice,
`\\\\le`, is repaired in reference.py: only data pipelines do that to text.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from rlvr.mathtext import THOUSANDS_MARKUP, UNICODE_OPERATORS, unwrap_boxes
from rlvr.verifiers.math.units import split_unit

# The operator signs (shared with the audit), a command followed by a space so that
# `2×x` does not become `2\\timesx`; then the other symbols.
_UNICODE = {sign: latex + " " if latex.startswith("\\") else latex
            for sign, latex in UNICODE_OPERATORS.items()} | {
    "\u03c0": "\\pi ", "\u221a": "\\sqrt ",
    "\u221e": "\\infty ", "\u222a": "\\cup ", "\u2208": "\\in ", "\u00b0": "^\\circ ",
    "\u2009": "", "\u202f": "", "\u00a0": " ",
    # currencies, like `$` (`1,000.99€`); superscript digits (`m²`, `x³`)
    "\u20ac": "", "\u00a3": "", "\u00a5": "", "\u00b2": "^2", "\u00b3": "^3",
}
# Spacing and sizing macros that never carry meaning.
_NOISE = re.compile(r"\\(?:left|right|displaystyle|textstyle|big|Big|bigg|Bigg)(?![a-zA-Z])"
                    r"|\\[!;:>,]|\\quad|\\qquad|~")
# `\color{red}{450}`, `\textcolor{red}{450}`: colour says nothing about the value
_COLOR = re.compile(r"\\(?:textcolor|color)\s*\{[A-Za-z!0-9]*\}")
# `0.\overline{3}`, `0.1\overline{6}`, `2.\dot{3}`: a repeating decimal is a value
_REPEATING = re.compile(r"(?<![\d.])(\d*)\.(\d*)\\(?:overline|dot)\s*\{?\s*(\d+)\s*\}?")
_NE = re.compile(r"\\ne(?![a-zA-Z])")
_PERCENT_WORD = re.compile(r"\s*(?:\\text\s*\{\s*percent(?:age)?\s*\}|\bpercent(?:age)?\b)")
_TEXT_LIKE = re.compile(r"\\(?:mbox|mathrm|textbf|textit|textrm|mathbf|mathit|mathsf|operatorname|textnormal|texttt)\s*(?=\{)")
_DEGREES = re.compile(r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|\\degree|\^\s*\{\s*\}")
_PERCENT = re.compile(r"\\?%")
# 1,234,567 (not 10,100,1000, which is a list): groups of exactly three digits.
# `0,111` is a decimal comma (no number is written with a leading 0 group), not 111.
# Inside parentheses or square brackets the comma separates the entries of a tuple or
# interval (MATH-500's `(2,12) \\cup (12,102)`, `[1,500]`), so only outside them.
_THOUSANDS = re.compile(r"(?<![\d.,])(?!0,)\d{1,3}(?:,\d{3})+(?![\d,])")
# `1 000`, `12 345 678`: groups of exactly three digits joined by single spaces, the
# first group not preceded by another number (`2 100` after `5 ` is not one number).
_SPACED_THOUSANDS = re.compile(r"(?<![\d.,])(?<![\d.,] )(?!0 )\d{1,3}(?: \d{3})+(?![\d,]| \d)")
# A Python escape in place of a command (see the module docstring).
_CONTROL_ESCAPES = re.compile(r"\\?([\x07\x08\x0b\x0c])")
_CONTROL_LETTER = {"\x07": "a", "\x08": "b", "\x0b": "v", "\x0c": "f"}
# `\text{e}`, `\mathrm{i}`: one letter in text style is that letter (Euler's e, i).
_TEXT_LETTER = re.compile(r"\\text\s*\{\s*([A-Za-z])\s*\}")
# `x = \\frac{1}{3} \\approx 0.33`: an approximation after an exact value is a gloss on
# it, dropped. An answer that is only approximate (`x \\approx 11`) keeps it and is not
# read as a value: no tolerance is ever added.
_TRAILING_APPROX = re.compile(r"(?<=\S)\s*\\approx(?![a-zA-Z])[^=]*$")
# `(11,7)or(7,11)`: "or" glued to brackets is still the word "or".
_GLUED_OR = re.compile(r"(?<=[)\]}])\s*or\s*(?=[(\[{\\])")
_SCIENTIFIC = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)[eE]([+-]?\d+)(?![\w.])")
# MATH writes a list with a serial "and": `8, 9, \text{ and } 10` is `8, 9, 10`.
_SERIAL_AND = re.compile(r",\s*(?:\\text\s*\{\s*and\s*\}|and\b)\s*")
# The empty set, however written: `\varnothing`, `\{\}`, `\{ \}`.
_EMPTY_SET = re.compile(r"\\varnothing(?![a-zA-Z])|\\\{\s*\\\}")


@dataclass(frozen=True)
class Normalized:
    """A cleaned answer: `text` (LaTeX), and what was stripped that still matters."""

    text: str
    percent: bool = False
    degrees: bool = False
    stray_words: bool = False  # words after the number that are no unit (units.py)


def unicode_to_latex(text: str) -> str:
    """`√50` -> `\\sqrt{50}`, `×` -> `\\times`, `−` -> `-`, `π` -> `\\pi` (`_UNICODE`)."""
    return _apply_unicode(text)


def _apply_unicode(text: str) -> str:
    # `√50` is the root of 50 (while `\\sqrt 50` would be `\\sqrt{5}0` in LaTeX)
    text = re.sub("\u221a\\s*(\\d+(?:\\.\\d+)?)", r"\\sqrt{\1}", text)
    return "".join(_UNICODE.get(char, char) for char in text)


def _repair_control_escapes(text: str) -> str:
    """A form feed and `rac` (or `\\` form feed `rac`) -> `\\frac`; see the docstring."""
    return _CONTROL_ESCAPES.sub(lambda m: "\\" + _CONTROL_LETTER[m.group(1)], text)


def _drop_commas_outside_brackets(match: re.Match[str]) -> str:
    """`12,102` -> `12102`, but not as an entry of `(12,102)` or `[1,500]`."""
    before = match.string[:match.start()]
    depth = sum(before.count(c) for c in "([") - sum(before.count(c) for c in ")]")
    return match.group() if depth > 0 else match.group().replace(",", "")


def _approximation_dropped(text: str) -> str:
    """`x = \\frac{1}{3} \\approx 0.33` -> `x = \\frac{1}{3}`; `\\frac{1}{3} \\approx 0.33` ->
    `\\frac{1}{3}`; `x \\approx 11` (nothing exact before it) unchanged."""
    match = _TRAILING_APPROX.search(text)
    if not match:
        return text
    head = text[:match.start()].strip()
    exact = head.split("=")[-1].strip() if "=" in head else head
    return head if exact and not re.fullmatch(r"[A-Za-z](?:_\{?\w+\}?)?", exact) else text


def _strip_math_delimiters(text: str) -> str:
    text = text.strip()
    for left, right in (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$")):
        if text.startswith(left) and text.endswith(right) and len(text) >= len(left) + len(right):
            text = text[len(left):len(text) - len(right)].strip()
    return text.replace("$", "") if "\\$" not in text else text


def _repeating_decimal(match: re.Match[str]) -> str:
    """`0.\\overline{3}` -> `\\frac{1}{3}`, `0.1\\overline{6}` -> `\\frac{1}{6}`: lowest terms."""
    whole, fixed, period = match.group(1) or "0", match.group(2), match.group(3)
    denominator = 10 ** len(fixed) * (10 ** len(period) - 1)
    numerator = int(whole + fixed + period) - int(whole + fixed or "0")
    fraction = Fraction(numerator, denominator)
    if fraction.denominator == 1:
        return str(fraction.numerator)
    return "\\frac{%d}{%d}" % (fraction.numerator, fraction.denominator)


def _outer_braces_dropped(text: str) -> str:
    """`{{24}}` -> `24`: braces around the whole answer group nothing (a set is
    `\\{...\\}`, or braces holding a top-level comma, structure.py)."""
    while text.startswith("{") and text.endswith("}") and "," not in text:
        depth = 0
        for i, char in enumerate(text):
            depth += {"{": 1, "}": -1}.get(char, 0)
            if depth == 0 and i < len(text) - 1:
                return text
        text = text[1:-1].strip()
    return text


def normalize(answer: str) -> Normalized:
    """Clean `answer` (an extracted final answer) into comparable LaTeX."""
    # a gold stored boxed (`\boxed{5}`, `$\boxed{5}$`) is the same gold
    text = _apply_unicode(_repair_control_escapes(answer))
    text = unwrap_boxes(_strip_math_delimiters(text)).strip()
    text = THOUSANDS_MARKUP.sub("", text)  # before `\!` and `\,` go as spacing
    text = _NOISE.sub(" ", _COLOR.sub("", text))
    text = re.sub(r"\\[dtc]frac", r"\\frac", text)
    text = _TEXT_LIKE.sub(r"\\text", text)
    text = re.sub(r"(?<!\\)\\ ", " ", text.replace("\\$", ""))  # `\ ` but not `\\ `
    text = _THOUSANDS.sub(_drop_commas_outside_brackets, text)
    text = _SPACED_THOUSANDS.sub(lambda m: m.group().replace(" ", ""), text)
    text = _GLUED_OR.sub(" or ", text)
    text = _EMPTY_SET.sub(r"\\emptyset", _SERIAL_AND.sub(", ", text))
    text = _NE.sub(r"\\neq", _PERCENT_WORD.sub(r"\\%", text))
    percent = bool(_PERCENT.search(text))
    text = _PERCENT.sub("", text)
    degrees = bool(_DEGREES.search(text))
    text = _DEGREES.sub("", text)
    text = _SCIENTIFIC.sub(r"\1\\times 10^{\2}", text)
    text, stray_words = split_unit(" ".join(text.split()))
    text = _approximation_dropped(text)
    text = re.sub(r"\s*\\text\s*\{\s*\}", "", text)  # empty \text{} left by a unit strip
    text = re.sub(r"\\text\s*\{([^{}a-zA-Z]*)\}", r"\1", text)  # `\textbf{5}` is 5
    text = _TEXT_LETTER.sub(r"\1", text)
    text = re.sub(r"[.\s]+$", "", text).strip()
    text = _REPEATING.sub(_repeating_decimal, _outer_braces_dropped(text))
    return Normalized(text, percent, degrees, stray_words)
