"""An expression's written form as a canonical tree, for the final-form and echo rules.

`canonical(tree)` maps a parsed, *unevaluated* sympy tree to nested tuples that forget
only what carries no work:

- order and grouping: `+` and `*` are flattened and their operands sorted
  (commutativity, associativity, brackets);
- neutral elements `*1`, `+0`, `^1` for the echo rule; for the final form they are
  kept as a marker (`450\\pi \\cdot 1` still has a step to take), except the 1 over a
  fraction bar (`\\frac{1}{1+\\sqrt2}` parses as a product with 1);
- spelling: a fraction `\\frac{3}{4}` and the rational 3/4 are one node (numerator
  literals over denominator literals, with a sign), `\\sqrt{x}` is `x^{1/2}`, `e^{x}` is
  `\\exp x`, `\\ln x` is `\\log x`;
- a rational coefficient times one sum is distributed (`\\frac{1+\\sqrt5}{2}` is
  `\\frac12 + \\frac{\\sqrt5}{2}`), because sympy writes it so when it evaluates; each
  term in lowest terms when the fraction as written is (`\\frac{108-31\\sqrt5}{216}`),
  else with its literals (`\\frac{2+2\\sqrt3}{2}` keeps a factor 2 to cancel);
- for the final form (`surds=True`), a root or reciprocal of a rational is spelled as
  sympy spells that irrational number (`\\sqrt{12}` is `2\\sqrt3`, `\\frac{1}{\\sqrt2}` is
  `\\frac{\\sqrt2}{2}`): extracting a square or rationalising is tidying, not computing.

Number literals are kept one by one: `6 \\cdot 75 \\pi` is the literals 6 and 75 times
pi, which is not the canonical tree of `450\\pi`. That difference is what
`still_evaluates` looks for: a numeric sub-expression is in final form when evaluating
it (sympy's constant folding, done safely by safety.safe_evaluate) leaves its canonical
tree unchanged, and no whole power of a numeric sum is left to expand
(`(1+\\sqrt2)^2`). The form check parses with decimals as exact fractions
(expressions.parse_expression); the echo rule parses them as written
(expressions.parse_tree), keeps surds as written (`\\sqrt{50}` is not `5\\sqrt2`) and
merges repeated factors into a power, so `(x+1)(x+1)` is `(x+1)^2`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import sympy

from rlvr.verifiers.math.safety import TooLarge, safe_evaluate

Node = tuple[Any, ...]
_ONE: Node = ("int", 1)
_ZERO: Node = ("int", 0)
_NEUTRAL: Node = ("neutral",)  # a written `*1`, `+0` or `^1`, kept for the final form


def _product(sign: int, nums: list[int], dens: list[int], others: list[Node]) -> Node:
    """The canonical node of sign * prod(nums) / prod(dens) * prod(others)."""
    nums = sorted(n for n in nums if n != 1)  # `1 \cdot x` and `\frac{1}{x}`: neutral
    dens = sorted(dens)
    others = sorted(others, key=repr)  # a total order on any nodes
    if sign == 1 and not dens and len(nums) + len(others) == 1:
        return ("int", nums[0]) if nums else others[0]
    if sign == 1 and not (nums or dens or others):
        return _ONE
    return ("mul", sign, tuple(nums), tuple(dens), tuple(others))


def _as_factors(node: Node) -> tuple[int, list[int], list[int], list[Node]]:
    if node[0] == "mul":
        return node[1], list(node[2]), list(node[3]), list(node[4])
    if node[0] == "int":
        return 1, [node[1]], [], []
    return 1, [], [], [node]


def _rational(value: sympy.Rational) -> Node:
    sign = -1 if value < 0 else 1
    nums = [abs(int(value.p))]
    dens = [int(value.q)] if value.q != 1 else []
    if sign == 1 and not dens:
        return ("int", nums[0])
    return _product(sign, nums, dens, [])


def _mul(args: list[Node], echo: bool) -> Node:
    sign, nums, dens, others = 1, [], [], []
    if not echo and _ONE in args and not any(_is_reciprocal(a) for a in args):
        # `450 \cdot 1` is work left; `\frac{1}{1+\sqrt2}` parses as 1 * (1+sqrt2)^-1
        others.append(_NEUTRAL)
    for arg in args:
        s, n, d, o = _as_factors(arg)
        sign, nums, dens, others = sign * s, nums + n, dens + d, others + o
    if echo:
        others = _merged_powers(others)
    if len(others) == 1 and others[0][0] == "add" and (nums or dens or sign == -1):
        # a rational coefficient times one sum: distributed, as sympy evaluates it
        return _add(_distributed(sign, nums, dens, list(others[0][1])), echo)
    return _product(sign, nums, dens, others)


def _distributed(sign: int, nums: list[int], dens: list[int], terms: list[Node]) -> list[Node]:
    """`\\frac{108 - 31\\sqrt5}{216}` -> `\\frac12 - \\frac{31\\sqrt5}{216}`: each term over the
    denominator, in lowest terms, as sympy writes it, when the fraction as written is in
    lowest terms (no factor common to the denominator and every numerator coefficient).
    When it is not (`\\frac{2+2\\sqrt3}{2}`), the terms keep the written literals, which
    the evaluated tree does not have: a common factor left to cancel."""
    parts = [_as_factors(term) for term in terms]
    coefficient = Fraction(math.prod(nums), math.prod(dens))
    if any(d for _, _, d, _ in parts) or \
            math.gcd(coefficient.denominator, *(coefficient.numerator * math.prod(n)
                                                for _, n, _, _ in parts)) != 1:
        return [_product(sign * s, nums + n, dens + d, o) for s, n, d, o in parts]
    reduced = []
    for s, n, _, o in parts:
        value = coefficient * math.prod(n)
        reduced.append(_product(sign * s, [value.numerator],
                                [value.denominator] if value.denominator != 1 else [], o))
    return reduced


def _is_reciprocal(node: Node) -> bool:
    return (node[0] == "pow" and node[2][0] == "mul" and node[2][1] == -1) \
        or (node[0] == "mul" and bool(node[3]))


def _merged_powers(factors: list[Node]) -> list[Node]:
    """`(x+1)(x+1)` -> `(x+1)^2` (echo only: for the final form it is work left)."""
    counts: dict[Node, int] = {}
    for factor in factors:
        counts[factor] = counts.get(factor, 0) + 1
    return [("pow", f, ("int", c)) if c > 1 else f for f, c in counts.items()]


def _add(args: list[Node], echo: bool = True) -> Node:
    terms: list[Node] = []
    for arg in args:
        terms.extend(arg[1] if arg[0] == "add" else [arg])
    if not echo and _ZERO in terms:
        terms.append(_NEUTRAL)
    terms = [t for t in terms if t != _ZERO]
    if not terms:
        return _ZERO
    return terms[0] if len(terms) == 1 else ("add", tuple(sorted(terms, key=repr)))


def _pow(base: Node, exponent: Node, echo: bool = True) -> Node:
    if exponent == _ONE:
        return base if echo else ("pow", base, _NEUTRAL)
    if exponent == ("mul", -1, (), (), ()) and base[0] == "int" and base[1] != 0:
        return _product(1, [], [base[1]], [])  # `\frac{..}{4}`: a denominator literal
    return ("pow", base, exponent)


def canonical(tree: sympy.Basic, echo: bool = False, surds: bool = True) -> Node:
    """The canonical tree of `tree` (see the module docstring); `surds=False` keeps a
    surd as written (`\\sqrt{50}` is not `5\\sqrt2`), as `echo=True` always does."""
    if isinstance(tree, sympy.Integer):
        return ("int", int(tree)) if tree >= 0 else _product(-1, [abs(int(tree))], [], [])
    if isinstance(tree, sympy.Rational):
        return _rational(tree)
    if isinstance(tree, sympy.Float):
        text = sympy.sstr(abs(tree))
        return ("float", text) if tree >= 0 else _product(-1, [], [], [("float", text)])
    if tree is sympy.S.NegativeInfinity:
        return _product(-1, [], [], [("atom", "oo")])
    if isinstance(tree, sympy.MatrixBase):  # entries in order (matrices have no .args)
        return ("matrix", tree.shape, tuple(canonical(e, echo, surds) for e in tree))
    if not tree.args:
        return ("atom", sympy.srepr(tree))
    args = [canonical(arg, echo, surds) for arg in tree.args]
    if isinstance(tree, sympy.Mul):
        return _mul(args, echo)
    if isinstance(tree, sympy.Add):
        return _add(args, echo)
    if isinstance(tree, sympy.Pow):
        surd = _surd(tree) if surds and not echo else None
        return canonical(surd, echo, surds) if surd is not None else _pow(args[0], args[1], echo)
    if isinstance(tree, sympy.exp):
        return _pow(("atom", "E"), args[0], echo)
    if isinstance(tree, sympy.log) and len(args) == 2 and tree.args[1] is sympy.E:
        args = args[:1]  # `\ln x` is log(x, E) as parsed and log(x) once evaluated
    return ("fn", type(tree).__name__, tuple(args))


def _surd(tree: sympy.Pow) -> sympy.Basic | None:
    """A root or reciprocal of a rational or of a surd, as sympy writes that irrational
    number (`\\sqrt{12}` -> `2\\sqrt3`, `\\frac{1}{\\sqrt2}` -> `\\frac{\\sqrt2}{2}`): the spelling
    of a surd is free. None when the result is rational (`\\sqrt{16}` is 4 left undone) or
    the power is anything else."""
    base, exponent = tree.args
    if not (isinstance(exponent, sympy.Rational) and abs(exponent) <= 1):
        return None
    inner = base.args[0] if isinstance(base, sympy.Pow) and base.args[1].is_Rational else base
    if not isinstance(inner, sympy.Rational) or inner <= 0 or abs(inner.p) > 10**12 \
            or inner.q > 10**12 or (exponent.is_Integer and base is inner):
        return None
    value = sympy.Pow(sympy.Pow(inner, base.args[1]) if base is not inner else inner, exponent)
    return None if value.is_Rational or value == tree else value


def _folds(tree: sympy.Basic) -> bool:
    """Evaluating the numeric `tree` changes its canonical tree (or cannot be done)."""
    try:
        value = safe_evaluate(tree)
    except TooLarge:
        return True  # a number too large to write out is not written out
    except Exception:  # sympy raises many types on odd input (BudgetExceeded is not one)
        return False  # sympy cannot evaluate it: nothing to say about its form
    return canonical(value) != canonical(tree) or _expands(value)


MAX_EXPANDED_POWER = 12  # (1+\sqrt2)^{12} expands at once; higher powers of sums are work


def _expands(value: sympy.Basic) -> bool:
    """A power of a numeric sum with a whole exponent is multiplication left undone:
    `(1+\\sqrt2)^2` is `3+2\\sqrt2`. sympy's folding leaves it, so it is expanded here
    (a reciprocal, `\\frac{1}{1+\\sqrt2}`, is not: expanding leaves it as it is)."""
    powers = [p for p in value.atoms(sympy.Pow) if p.base.is_Add and p.exp.is_Integer
              and p.exp > 1]
    if not powers:
        return False
    if any(p.exp > MAX_EXPANDED_POWER for p in powers):
        return True
    try:
        return canonical(sympy.expand(value)) != canonical(value)
    except Exception:  # see _folds
        return False


def still_evaluates(tree: sympy.Basic) -> bool:
    """Some numeric sub-expression of the unevaluated `tree` still evaluates: a whole
    sub-tree without free symbols folds, or the numeric operands of a sum or product
    with symbols fold together (`2 \\cdot 3x`, `x + 1 + 1`)."""
    if not isinstance(tree, sympy.Basic) or isinstance(tree, sympy.MatrixBase):
        return False
    if not tree.free_symbols:
        return _folds(tree)
    if isinstance(tree, (sympy.Add, sympy.Mul)):
        numeric = [arg for arg in tree.args if not arg.free_symbols]
        if len(numeric) > 1 and _folds(tree.func(*numeric, evaluate=False)):
            return True
    return any(still_evaluates(arg) for arg in tree.args)


def has_operation(node: Node) -> bool:
    """The canonical tree is more than one literal or name (`6 * 75`, `x^2`, `\\sqrt2`;
    not `450`, `-5`, `\\frac14`, `0.5`, `x`): only such an answer can echo the prompt."""
    if node[0] in ("int", "float", "atom", "neutral"):
        return False
    if node[0] == "mul":
        _, nums, dens, others = node[1:]
        if nums and dens and math.gcd(nums[0], dens[0]) != 1:
            return True  # `\\frac{6}{8}`: a division left to do
        return len(nums) + len(others) > 1 or len(dens) > 1 or \
            any(has_operation(o) for o in others)
    return True
