"""Worked solutions for the arithmetic task, for the supervised warm-start.

Column addition written out digit by digit, least significant first, then the answer
after "####" (what the "exact" verifier reads):

    347+285=  ->  7+5=12;4+8+1=13;3+2+1=6;#### 632

The demonstrator can be sloppy: with probability `forget_carry` it drops each carry
("4+8=12" instead of "4+8+1=13") and carries the mistake through to the final answer.
A model imitating such demonstrations learns the carry step only as an unlikely
alternative; reward from a verifier, not more imitation, is what makes it reliable.
That is the embedded demo's story (its defaults are in rlvr.training.config).
"""

from __future__ import annotations

import random


def column_addition(a: int, b: int, rng: random.Random, forget_carry: float = 0.0) -> str:
    """The worked solution of a + b (a, b >= 0), possibly with forgotten carries."""
    da, db = str(a)[::-1], str(b)[::-1]
    steps, digits, carry = [], [], 0
    for i in range(max(len(da), len(db))):
        x = int(da[i]) if i < len(da) else 0
        y = int(db[i]) if i < len(db) else 0
        if carry and rng.random() < forget_carry:
            carry = 0  # the sloppy step: the carry is dropped
        total = x + y + carry
        steps.append(f"{x}+{y}+{carry}={total}" if carry else f"{x}+{y}={total}")
        digits.append(total % 10)
        carry = total // 10
    if carry:
        digits.append(carry)
    answer = "".join(str(d) for d in reversed(digits)).lstrip("0") or "0"
    return ";".join(steps) + f";#### {answer}"
