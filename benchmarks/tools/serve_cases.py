"""Generated cases for benchmarks/verifiers/bench_serve.py, each with the verdict it must get.

Math: integer arithmetic (with the question as the prompt), reduced fractions, surds
and GSM8K-style "#### n" answers, half right and half wrong. Code: small HumanEval-
style functions with right and wrong bodies. Hostile code: a fork bomb, a memory flood,
an infinite loop, exiting 0 before the asserts, an always-equal object; all must score 0.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from math import gcd
from typing import Any


@dataclass(frozen=True)
class Labelled:
    line: dict[str, Any]  # a `rlvr verify` input line
    passed: bool  # what the verdict must say (hostile: False, and score 0)
    kind: str  # "math", "code" or "hostile"


def math_case(rng: random.Random, i: int) -> Labelled:
    right = i % 2 == 0
    form = i % 4
    if form == 0:
        a, b = rng.randint(10, 999), rng.randint(10, 999)
        op, value = rng.choice([("+", a + b), ("-", a - b), ("*", a * b)])
        given = value if right else value + rng.choice([-2, -1, 1, 3])
        line = {"verifier": "math", "prompt": f"What is {a} {op} {b}?",
                "completion": f"Working it out, {a} {op} {b} gives \\boxed{{{given}}}.",
                "reference": str(value)}
    elif form == 1:
        p, q = rng.randint(1, 60), rng.randint(2, 61)
        p, q = p // gcd(p, q), q // gcd(p, q)
        if q == 1:
            q, p = q + 1, 2 * p + 1
        shown = f"{p}/{q}" if right else f"{p + 1}/{q}"
        line = {"verifier": "math", "completion": f"The answer is $\\boxed{{{shown}}}$.",
                "reference": f"\\frac{{{p}}}{{{q}}}"}
    elif form == 2:
        k, m = rng.randint(2, 9), rng.choice([2, 3, 5, 6, 7, 10])
        shown = k if right else k + 1
        line = {"verifier": "math", "completion": f"So $\\boxed{{{shown}\\sqrt{{{m}}}}}$",
                "reference": f"{k}\\sqrt{{{m}}}"}
    else:
        n = rng.randint(1, 10_000)
        line = {"verifier": "math", "completion": f"She has {n if right else n + 10} left.\n"
                f"#### {n if right else n + 10}", "reference": str(n)}
    return Labelled(line, right, "math")


FUNCTIONS = [  # (name, args, right body, wrong body, asserts)
    ("add", "a, b", "return a + b", "return a - b", ["(1, 2) == 3", "(-4, 4) == 0"]),
    ("square", "x", "return x * x", "return x + x", ["(3) == 9", "(-2) == 4", "(0) == 0"]),
    ("largest", "xs", "return max(xs)", "return xs[0]", ["([1, 5, 2]) == 5", "([7]) == 7"]),
    ("backwards", "s", "return s[::-1]", "return s", ["('abc') == 'cba'", "('') == ''"]),
    ("evens", "xs", "return [x for x in xs if x % 2 == 0]",
     "return [x for x in xs if x % 2]", ["([1, 2, 3, 4]) == [2, 4]", "([]) == []"]),
]


def _reference(name: str, asserts: list[str]) -> dict[str, Any]:
    body = "".join(f"    assert candidate{a}\n" for a in asserts)
    return {"test": f"def check(candidate):\n{body}", "entry_point": name, "timeout": 3}


def code_case(i: int) -> Labelled:
    name, args, good, bad, asserts = FUNCTIONS[i % len(FUNCTIONS)]
    right = (i // len(FUNCTIONS)) % 2 == 0
    completion = f"```python\ndef {name}({args}):\n    {good if right else bad}\n```"
    return Labelled({"verifier": "code", "completion": completion,
                     "reference": _reference(name, asserts)}, right, "code")


HOSTILE = {
    "fork_bomb": "import os\ndef square(x):\n    while True:\n        try:\n"
                 "            os.fork()\n        except OSError:\n            pass\n",
    "memory_flood": "def square(x):\n    hog = bytearray(16 * 1024 ** 3)\n    return x * x\n",
    "infinite_loop": "def square(x):\n    while True:\n        pass\n",
    "exit_before_asserts": "import os\ndef square(x):\n    return 0\nos._exit(0)\n",
    "always_equal": "class Anything:\n    def __eq__(self, other):\n        return True\n"
                    "    __hash__ = object.__hash__\ndef square(x):\n    return Anything()\n",
}


def hostile_case(i: int) -> Labelled:
    code = list(HOSTILE.values())[i % len(HOSTILE)]
    return Labelled({"verifier": "code", "completion": code,
                     "reference": _reference("square", ["(3) == 9", "(-2) == 4"])},
                    False, "hostile")


def build(n_math: int, n_code: int, n_hostile: int, seed: int = 0) -> list[Labelled]:
    """Every case, shuffled (hostile code lands among the rest)."""
    rng = random.Random(seed)
    cases = ([math_case(rng, i) for i in range(n_math)] + [code_case(i) for i in range(n_code)]
             + [hostile_case(i) for i in range(n_hostile)])
    rng.shuffle(cases)
    return cases
