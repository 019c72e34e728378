"""A boxed chain of equalities: `7 \\times 5 = 35` states its work and its value.

The chain is the answer when every side is a number (no free symbols; a leading name,
`x = 7 \\times 5 = 35`, only labels it) and there are two sides or more. The verifier
pays it when every side equals the next and the last side, the value it ends on, is
in final form (answer_form.py): `7 \\times 5 = 35` for 35 is paid, `7 \\times 5 = 36` is
wrong (and so is `35 = 36`), `35 = 7 \\times 5` is unsimplified (it ends on work).
"""

from __future__ import annotations

from sympy.core.function import AppliedUndef

from rlvr.verifiers.math.expressions import parse_expression
from rlvr.verifiers.math.labels import NAME
from rlvr.verifiers.math.structure import has_relation_operator, split_top_level


def numeric_chain(text: str) -> list[str] | None:
    """The sides of the numeric equality chain `text`, or None when it is not one."""
    if "=" not in text or has_relation_operator(text):
        return None
    sides = split_top_level(text, "=")
    if len(sides) > 2 and NAME.match(sides[0]):
        sides = sides[1:]
    if len(sides) < 2 or not all(sides):
        return None
    for side in sides:
        parsed = parse_expression(side)
        if parsed is None or parsed.tree.free_symbols or parsed.tree.atoms(AppliedUndef):
            return None  # `f(2) = 11` names its value
    return sides
