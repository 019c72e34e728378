"""Evaluate parsed expressions only when the result is provably small.

latex2sympy2_extended returns unevaluated trees (`Pow(9, Pow(9, Pow(9, 9)))`), which
cost nothing to build. Evaluating one can cost anything: `9^{9^{9^9}}` has more digits
than there are atoms in the universe, `(10!)!` has millions. So evaluation goes bottom
up and checks, before each power, factorial or binomial, that its result stays under
`MAX_DIGITS`; otherwise it raises `TooLarge` and the caller decides on the unevaluated
trees alone (structural equality) or scores 0. Never `str()` such a tree either.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

import sympy

MAX_DIGITS = 20_000  # an exact integer of this size multiplies in microseconds
MAX_SYMBOLIC_EXPONENT = 200  # (x+1)^200 expands to 201 terms; higher powers are bombs
MAX_NODES = 400  # larger trees are not answers anyone writes; skip the algebra


class TooLarge(ArithmeticError):
    """Evaluating the expression would build a number too large to handle."""


def _digits(value: sympy.Basic) -> float | None:
    """Decimal digits needed to write a rational number exactly (numerator plus
    denominator); None for anything else (symbols, pi, sqrt(2), ...)."""
    if value.is_Rational:
        return (abs(value.p).bit_length() + value.q.bit_length()) * 0.30103
    if value.is_Float:
        return 20.0
    return None


def _check_pow(base: sympy.Basic, exponent: sympy.Basic) -> None:
    if not exponent.is_Number or base in (0, 1, -1):
        return
    if abs(exponent) > MAX_DIGITS:
        raise TooLarge("power with a huge exponent")
    if base.free_symbols and abs(exponent) > MAX_SYMBOLIC_EXPONENT:
        raise TooLarge("symbolic power too high to expand")  # (x+1)^10000
    base_digits = _digits(base)
    if base_digits is not None and abs(float(exponent)) * max(base_digits, 1.0) > MAX_DIGITS:
        raise TooLarge(f"power with more than {MAX_DIGITS} digits")


def _check_factorial(argument: sympy.Basic) -> None:
    if argument.is_Number and abs(argument) > 3000:
        raise TooLarge("factorial of a large number")


# Unevaluated operators: simplify() would evaluate them (a product up to 10^6 is a
# factorial of a million); a final answer never needs them evaluated.
_OPERATORS = (sympy.Sum, sympy.Product, sympy.Integral, sympy.Limit, sympy.Derivative)


def _rebuild(node: sympy.Basic, args: tuple[sympy.Basic, ...]) -> sympy.Basic:
    if isinstance(node, _OPERATORS):
        raise TooLarge(f"unevaluated {type(node).__name__} in an answer")
    if isinstance(node, sympy.Pow):
        _check_pow(*args)
    elif isinstance(node, (sympy.factorial, sympy.factorial2, sympy.subfactorial)):
        _check_factorial(args[0])
    elif isinstance(node, sympy.binomial):
        _check_factorial(args[0])
    for arg in args:
        if arg.is_Integer and abs(arg.p).bit_length() > MAX_DIGITS * 4:
            raise TooLarge("intermediate integer too large")
    return node.func(*args)


def node_count(expr: sympy.Basic, limit: int = MAX_NODES) -> int:
    """Nodes in the tree, counting stops just past `limit`."""
    count = 0
    stack = [expr]
    while stack and count <= limit:
        node = stack.pop()
        count += 1
        stack.extend(getattr(node, "args", ()))
    return count


def safe_evaluate(expr: sympy.Basic) -> sympy.Basic:
    """`expr` with its numbers computed, bottom up; raises TooLarge before a blow-up."""
    if node_count(expr) > MAX_NODES:
        raise TooLarge("expression tree too large")
    return _evaluate(expr)


def _evaluate(node: sympy.Basic) -> sympy.Basic:
    if not getattr(node, "args", ()) or isinstance(node, (sympy.Symbol, sympy.Number)):
        return node
    if isinstance(node, sympy.MatrixBase):
        return node.applyfunc(_evaluate)
    args = tuple(_evaluate(arg) for arg in node.args)
    return _rebuild(node, args)


class BudgetExceeded(BaseException):
    """The check ran past its in-process time budget. A BaseException so that the
    `except Exception` around the grammar and sympy cannot swallow it."""


def _raise_budget(signum: int, frame: object) -> None:
    raise BudgetExceeded()


@contextmanager
def time_budget(seconds: float | None) -> Iterator[None]:
    """Raise BudgetExceeded in this block after `seconds` (SIGALRM; the grammar and
    sympy are pure Python, so the signal lands). A second line of defence inside the
    pool's hard kill, which then never has to restart a worker; also protects direct
    in-process use. Only in the main thread and when no other timer is running."""
    if not seconds or threading.current_thread() is not threading.main_thread() \
            or signal.getitimer(signal.ITIMER_REAL)[0] > 0:
        yield
        return
    previous = signal.signal(signal.SIGALRM, _raise_budget)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
