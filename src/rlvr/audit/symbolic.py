"""The strict re-check's rule for symbolic references (pi multiples, surds, trig values,
polynomials): the answer must not leave work undone. Regex and integers only, like the
rest of the audit: a second opinion that shares no rule with the math verifier (only
the facts of notation, through literals.py and rlvr.mathtext).

    unevaluated_symbolic(answer, reference) -> bool

True when the reference has no plain value (literals.value_of_reference is None) and,
after each constant (`\\pi`, `e`, `\\sqrt{n}`) is read as one symbol C, the answer has

- two number literals in one term (`6*75C`, `C*6*6`, `\\frac{4}{3}C*27`, `135*\\frac{C}{180}`),
- a fraction of integers not in lowest terms (`\\frac{72C}{2}`, `\\frac{6}{8}`),
- two terms on the same constant or monomial (`2C-C`, `x^2+3x+2x+6`),
- a power of a number or of a numeric bracket (`6^2C`, `(1+C)^2`), or a product of
  numeric brackets, where the reference has none (a factored polynomial, `(x+1)^2` for
  `x^2+2x+1`, is symbolic equivalence's to judge: the verifier pays it, unless the
  prompt holds it),
- a function the reference does not use (`\\sin`, `\\cos`, `\\tan`, `\\log`, `\\ln`, `!`,
  `\\binom`).
"""

from __future__ import annotations

import math
import re
from typing import Any

from rlvr.audit.literals import compact, strip_decorations, value_of_reference

_CONSTANT = re.compile(r"\\pi(?![A-Za-z])|\\sqrt\{\d+\}|\\sqrt\d|(?<![A-Za-z\\])e(?![A-Za-z])")
_FUNCTIONS = re.compile(r"\\(?:sin|cos|tan|cot|sec|csc|arcsin|arccos|arctan|log|ln|exp|binom)"
                        r"(?![A-Za-z])|!")
_FRACTION = re.compile(r"\\frac\{(\d*)(C?)\}\{(\d+)\}")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_POWER = re.compile(r"(?:\d|\))\^")
_BRACKET_PRODUCT = re.compile(r"\)\s*\*?\s*\(")


def _terms(text: str) -> list[str]:
    """Top-level terms of a sum (`2C-C` -> ["2C", "-C"]); brackets are kept whole."""
    terms, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += char in "({" and 1 or (char in ")}" and -1 or 0)
        if depth == 0 and char in "+-" and i > start:
            terms.append(text[start:i])
            start = i
    terms.append(text[start:])
    return [t for t in terms if t.strip("+-")]


def _literals(term: str) -> int:
    """Number literals in one term; a fraction of two integers counts once, an
    exponent not at all (`6x^2` is one)."""
    term = re.sub(r"\^\{?-?\d+\}?", "", term)
    count = len(_FRACTION.findall(term))
    return count + len(_NUMBER.findall(_FRACTION.sub("F", term)))


def _unreduced(text: str) -> bool:
    for top, _, bottom in _FRACTION.findall(text):
        if top and int(bottom) and (int(bottom) == 1 or math.gcd(int(top), int(bottom)) > 1):
            return True
    return False


def _like_terms(terms: list[str]) -> bool:
    """Two terms whose non-numeric parts agree (`2C`, `-C`; `3x`, `2x`)."""
    shapes = [re.sub(r"^[-+]?[\d.]*\*?", "", t) for t in terms]
    shapes = [s for s in shapes if s]
    return len(shapes) != len(set(shapes))


def unevaluated_symbolic(answer: str | None, reference: Any) -> bool:
    """See the module docstring."""
    if not answer or not isinstance(reference, str) or value_of_reference(reference) is not None:
        return False
    said = _CONSTANT.sub("C", compact(strip_decorations(answer)))
    gold = _CONSTANT.sub("C", compact(strip_decorations(reference)))
    terms = _terms(said)
    if any(_literals(t) > 1 for t in terms) or _unreduced(said) or _like_terms(terms):
        return True
    numeric_brackets = not re.search(r"[A-BD-Za-z]", said.replace("\\frac", ""))
    for pattern in (_POWER, _BRACKET_PRODUCT) if numeric_brackets else ():
        if pattern.search(said) and not pattern.search(gold):
            return True
    return bool(_FUNCTIONS.search(said)) and not _FUNCTIONS.search(gold)
