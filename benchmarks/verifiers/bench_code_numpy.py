"""What numpy in the code sandbox costs per check: HumanEval-style tasks, each with a
numpy solution and a standard-library one, graded by the sandboxed "code" verifier.

    PYTHONPATH=src python -m benchmarks.verifiers.bench_code_numpy [--rounds 5] [--workers 2]

Latency: one verifier, one check at a time, median over every task and round, for
  - stdlib solutions with the default package list (numpy visible, not imported),
  - stdlib solutions with `packages=[]` (the sandbox as before numpy was allowed),
  - numpy solutions, numpy preloaded in the warm sandbox (the default "auto" does
    it after the first numpy program),
  - numpy solutions with `preload_packages="never"` (each check imports numpy).
Throughput: all tasks x rounds through a VerifierPool of `--workers`, numpy and
stdlib solutions timed separately.
Last line: numpy: per check N ms with numpy (preloaded; M ms imported per check),
S ms stdlib-only (+D ms); pool X/s vs Y/s
"""

from __future__ import annotations

import argparse
import statistics
import time

from rlvr.verifiers.code import CodeVerifier
from rlvr.verifiers.pool import Case, VerifierPool


def _task(name: str, args: str, numpy_body: str, stdlib_body: str,
          asserts: list[str]) -> dict:
    body = "".join(f"    assert candidate{a}\n" for a in asserts)
    return {"reference": {"test": f"def check(candidate):\n{body}", "entry_point": name},
            "numpy": f"import numpy as np\ndef {name}({args}):\n    {numpy_body}\n",
            "stdlib": f"def {name}({args}):\n    {stdlib_body}\n"}


TASKS = [
    _task("mean", "xs", "return float(np.mean(xs))", "return sum(xs) / len(xs)",
          ["([1, 2, 3]) == 2.0", "([5]) == 5.0"]),
    _task("dot", "a, b", "return int(np.dot(a, b))", "return sum(x * y for x, y in zip(a, b))",
          ["([1, 2], [3, 4]) == 11", "([], []) == 0"]),
    _task("cumsum", "xs", "return np.cumsum(xs, dtype=np.int64).tolist()",
          "import itertools; return list(itertools.accumulate(xs))",
          ["([1, 2, 3]) == [1, 3, 6]", "([4]) == [4]"]),
    _task("argmax", "xs", "return int(np.argmax(xs))", "return xs.index(max(xs))",
          ["([1, 9, 3]) == 1", "([7, 7]) == 0"]),
    _task("transpose", "m", "return np.array(m).T.tolist()", "return [list(r) for r in zip(*m)]",
          ["([[1, 2], [3, 4]]) == [[1, 3], [2, 4]]", "([[1, 2, 3]]) == [[1], [2], [3]]"]),
    _task("matmul", "a, b", "return (np.array(a) @ np.array(b)).tolist()",
          "return [[sum(x * y for x, y in zip(r, c)) for c in zip(*b)] for r in a]",
          ["([[1, 2]], [[3], [4]]) == [[11]]", "([[1, 0], [0, 1]], [[5, 6], [7, 8]]) == [[5, 6], [7, 8]]"]),
    _task("unique_sorted", "xs", "return np.unique(xs).tolist()", "return sorted(set(xs))",
          ["([3, 1, 3, 2]) == [1, 2, 3]", "([]) == []"]),
    _task("std", "xs", "return round(float(np.std(xs)), 6)",
          "m = sum(xs) / len(xs); return round((sum((x - m) ** 2 for x in xs) / len(xs)) ** 0.5, 6)",
          ["([2, 4, 4, 4, 5, 5, 7, 9]) == 2.0", "([1]) == 0.0"]),
]


def latency(verifier: CodeVerifier, kind: str, rounds: int) -> float:
    """Median seconds of one check, over every task and round (each must pass)."""
    times = []
    for _ in range(rounds):
        for task in TASKS:
            start = time.perf_counter()
            verdict = verifier.verify(task[kind], task["reference"])
            times.append(time.perf_counter() - start)
            assert verdict.passed, (kind, task["reference"]["entry_point"], verdict)
    return statistics.median(times)


def throughput(pool: VerifierPool, kind: str, rounds: int) -> float:
    cases = [Case("code", t[kind], t["reference"]) for t in TASKS] * rounds
    start = time.perf_counter()
    verdicts = pool.verify(cases)
    assert all(v.passed for v in verdicts), [v for v in verdicts if not v.passed][:2]
    return len(cases) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    default, bare = CodeVerifier(), CodeVerifier(packages=[])
    lazy = CodeVerifier(preload_packages="never")
    try:
        for verifier in (default, bare, lazy):  # warm every sandbox
            latency(verifier, "stdlib", 1)
        numbers = {"stdlib, numpy listed": latency(default, "stdlib", args.rounds),
                   "stdlib, packages=[]": latency(bare, "stdlib", args.rounds),
                   "numpy": latency(default, "numpy", args.rounds),
                   "numpy, imported per check": latency(lazy, "numpy", args.rounds)}
    finally:
        for verifier in (default, bare, lazy):
            verifier.close()
    for label, seconds in numbers.items():
        print(f"per check ({label}, median of {len(TASKS) * args.rounds}): "
              f"{seconds * 1000:.1f} ms", flush=True)
    with VerifierPool(workers=args.workers, preload=["code"]) as pool:
        pool.start()
        throughput(pool, "numpy", 1)  # warm every worker
        rates = {kind: throughput(pool, kind, args.rounds) for kind in ("numpy", "stdlib")}
    print(f"pool of {args.workers}: numpy {rates['numpy']:.1f}/s, stdlib {rates['stdlib']:.1f}/s")
    with_numpy, stdlib = numbers["numpy"], numbers["stdlib, numpy listed"]
    per_check = numbers["numpy, imported per check"]
    print(f"numpy: per check {with_numpy * 1000:.0f} ms with numpy (preloaded; "
          f"{per_check * 1000:.0f} ms imported per check), {stdlib * 1000:.0f} ms stdlib-only "
          f"(+{(with_numpy - stdlib) * 1000:.0f} ms); pool {rates['numpy']:.1f}/s "
          f"vs {rates['stdlib']:.1f}/s")


if __name__ == "__main__":
    main()
