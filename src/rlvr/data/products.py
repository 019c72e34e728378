"""Two-digit products ("What is 47 * 38?"), the python_tool demo's task
(configs/tools_products.yaml): a small model often gets them wrong by itself, a Python
tool never does. Graded by the `math` verifier; the reference is the bare product.

The split hashes the unordered pair, so 47 * 38 and 38 * 47 always land in the same
split: held-out problems are new to training in either order.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlvr.data.arithmetic import ArithmeticTask, Split


@dataclass(frozen=True)
class ProductsTask(ArithmeticTask):
    min_digits: int = 2
    max_digits: int = 2
    ops: tuple[str, ...] = ("*",)
    template: str = "What is {a} * {b}?"
    verifier: str = "math"

    def split_of(self, a: int, op: str, b: int) -> Split:
        low, high = sorted((a, b))
        return super().split_of(low, op, high)
