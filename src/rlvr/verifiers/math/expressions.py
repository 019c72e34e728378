"""Parse one LaTeX expression into sympy with a whitelisting parser, never eval.

latex2sympy2_extended is an ANTLR grammar: it builds sympy objects node by node from
the grammar's rules, so model text can only become numbers, symbols and the functions
the grammar knows; nothing reaches Python's eval (its only parse_expr call is for
caller-supplied variable values, which we never pass). Its own string normalisation is
turned off: ours (normalize.py) runs first and we want one set of rules.

Decimals are rewritten to fractions before parsing so that every number is exact:
0.5 is 1/2, 0.33 is 33/100 (not 1/3), and no float tolerance can make 1/2^99 equal
1/2^98.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import sympy
from latex2sympy2_extended import latex2sympy
from latex2sympy2_extended.latex2sympy2 import ConversionConfig
from latex2sympy2_extended.math_normalization import NormalizationConfig

from rlvr.verifiers.math.safety import TooLarge, safe_evaluate

MAX_LENGTH = 300  # characters of one expression; longer "answers" are spam
# The grammar's parse time grows with bracket nesting (about 0.1 s a level on an idle
# core): `((((((((x))))))))...` could otherwise run past the time limit.
MAX_DEPTH = 10
_NO_NORMALIZATION = NormalizationConfig(basic_latex=False, units=False, malformed_operators=False,
                                        nits=False, boxed="none", equations=False)
_CONVERSION = ConversionConfig(interpret_as_mixed_fractions=True,
                               interpret_simple_eq_as_assignment=False,
                               interpret_contains_as_eq=True, lowercase_symbols=False)
_DECIMAL = re.compile(r"(?<![\d.])(\d*)\.(\d+)(?![\d.])")


@dataclass(frozen=True)
class Parsed:
    """A parsed expression: `value` when it could be evaluated safely, else only the
    unevaluated `tree` (a huge power or factorial), compared structurally."""

    tree: sympy.Basic
    value: sympy.Basic | None


def _decimals_to_fractions(text: str) -> str:
    def exact(match: re.Match[str]) -> str:
        whole, frac = match.group(1) or "0", match.group(2)
        return "\\frac{%s}{1%s}" % ((whole + frac).lstrip("0") or "0", "0" * len(frac))
    return _DECIMAL.sub(exact, text)


def _prepare(text: str, exact_decimals: bool = True) -> str:
    if exact_decimals:
        text = _decimals_to_fractions(text)
    # `\frac 34` and `\frac9{19}`: single-token arguments the grammar may misread
    text = re.sub(r"\\frac\s*(\d)\s*(\d)", r"\\frac{\1}{\2}", text)
    text = re.sub(r"\\frac\s*(\d)(?=\s*\{)", r"\\frac{\1}", text)
    text = re.sub(r"(\\frac\s*\{[^{}]*\})\s*([a-zA-Z0-9])", r"\1{\2}", text)
    text = re.sub(r"\\sqrt\s*(\d)", r"\\sqrt{\1}", text)
    return text


def _nesting_depth(text: str) -> int:
    depth = deepest = 0
    for char in text:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    return deepest


# Words are not products of variables. The grammar reads `6 + 0 equals 8` as
# 6 + 0*e*q*u*a*l*s*8 = 6 (found by the math red-team run, bench_redteam.py, paid under
# `answer_form: equivalent`): a plain word of four letters or more, or "is"/"are"/"the",
# makes the text prose, not an expression. Function names written without a backslash
# stay readable.
_PROSE_WORD = re.compile(r"(?<![\\A-Za-z])(?!(?:sqrt|arcsin|arccos|arctan|sinh|cosh|tanh|"
                         r"infty|cdot|times|frac|pmatrix|bmatrix|matrix)(?![A-Za-z]))"
                         r"(?:[A-Za-z]{4,}|is|are|the)(?![A-Za-z])")


def _grammar_tree(text: str, exact_decimals: bool) -> sympy.Basic | None:
    """The grammar's (unevaluated) tree of one expression, or None (see parse_expression)."""
    if not text or len(text) > MAX_LENGTH or _nesting_depth(text) > MAX_DEPTH:
        return None
    if _PROSE_WORD.search(re.sub(r"\\(?:text|mathrm|operatorname)\s*\{[^{}]*\}", "", text)):
        return None
    try:
        tree = latex2sympy(_prepare(text, exact_decimals), normalization_config=_NO_NORMALIZATION,
                           conversion_config=_CONVERSION)
    except Exception:  # the grammar rejects the text: an unparseable answer, not a crash
        return None
    if not isinstance(tree, (sympy.Expr, sympy.MatrixBase)):
        return None  # sets, relations, logic: the shape layer handles those, not sympy
    return tree


@lru_cache(maxsize=4096)
def parse_tree(text: str) -> sympy.Basic | None:
    """The expression as written, for judging its form (tree_form.py): unevaluated, and
    decimals kept as decimals (0.75 is a value literal; `\\frac{75}{100}` is not)."""
    return _grammar_tree(text, exact_decimals=False)


@lru_cache(maxsize=4096)
def parse_expression(text: str) -> Parsed | None:
    """The parsed expression, or None when it does not parse (or is too long, or is
    prose)."""
    tree = _grammar_tree(text, exact_decimals=True)
    if tree is None:
        return None
    try:
        value = safe_evaluate(tree)
    except TooLarge:
        value = None
    except (TypeError, ValueError, ArithmeticError, AttributeError, RecursionError):
        return None
    return Parsed(tree, value)
