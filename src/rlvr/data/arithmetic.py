"""A procedural arithmetic task with train and held-out splits that never overlap.

A problem's split is a pure function of its text (a hash), so the same problem lands in
the same split whatever the seed, count or order of generation: held-out accuracy is
measured on problems training can never see.
"""

from __future__ import annotations

import hashlib
import operator
import random
from dataclasses import dataclass
from typing import Literal

from rlvr.data.records import TaskRecord

_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul}
Split = Literal["train", "test"]


@dataclass(frozen=True)
class ArithmeticTask:
    """Problems "a op b" with operands of min_digits..max_digits digits.

    ops:           operators drawn uniformly ("+", "-", "*").
    template:      prompt text; fields {a}, {op}, {b}.
    test_fraction: share of all problems assigned to the held-out split.
    nonnegative:   for "-", order operands so the result is never negative.
    verifier:      registry name that checks the answer ("exact").
    """

    min_digits: int = 1
    max_digits: int = 2
    ops: tuple[str, ...] = ("+", "-")
    template: str = "{a}{op}{b}="
    test_fraction: float = 0.2
    nonnegative: bool = True
    verifier: str = "exact"

    def __post_init__(self) -> None:
        if not 1 <= self.min_digits <= self.max_digits:
            raise ValueError("need 1 <= min_digits <= max_digits")
        unknown = [op for op in self.ops if op not in _OPS]
        if unknown or not self.ops:
            raise ValueError(f"ops must be a non-empty subset of {list(_OPS)}, got {self.ops}")
        if not 0.0 < self.test_fraction < 1.0:
            raise ValueError("test_fraction must be in (0, 1)")

    def split_of(self, a: int, op: str, b: int) -> Split:
        digest = hashlib.sha256(f"{a}{op}{b}".encode()).digest()
        bucket = int.from_bytes(digest[:8], "big") / 2**64
        return "test" if bucket < self.test_fraction else "train"

    def _operand(self, rng: random.Random) -> int:
        digits = rng.randint(self.min_digits, self.max_digits)
        low = 0 if digits == 1 else 10 ** (digits - 1)
        return rng.randint(low, 10**digits - 1)

    def make(self, a: int, op: str, b: int) -> TaskRecord:
        if op == "-" and self.nonnegative and a < b:
            a, b = b, a
        answer = _OPS[op](a, b)
        return TaskRecord(prompt=self.template.format(a=a, op=op, b=b), reference=str(answer),
                          verifier=self.verifier, id=f"arith:{a}{op}{b}",
                          metadata={"a": a, "op": op, "b": b, "split": self.split_of(a, op, b)})

    def generate(self, n: int, split: Split = "train", seed: int = 0) -> list[TaskRecord]:
        """`n` distinct problems of `split`, reproducible from `seed`."""
        rng = random.Random(f"{seed}:{split}")
        seen: set[str] = set()
        records: list[TaskRecord] = []
        attempts = 0
        while len(records) < n:
            attempts += 1
            if attempts > 200 * n + 10_000:
                raise ValueError(f"cannot draw {n} distinct {split} problems from this task "
                                 f"(got {len(records)}); widen digits or ops")
            a, op, b = self._operand(rng), rng.choice(self.ops), self._operand(rng)
            record = self.make(a, op, b)
            if record.id in seen or record.metadata["split"] != split:
                continue
            seen.add(record.id)
            records.append(record)
        return records
