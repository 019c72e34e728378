"""rlvr's math verifier vs math-verify on the labelled set (tests/data/math_labelled.jsonl).

Accuracy: the fraction of labelled pairs whose verdict matches the hand label, per
category and overall. Throughput: verdicts per second over the whole set with both
cores for both graders, median of several runs, interleaved so both see the same noise.

Fairness:
- rlvr runs through VerifierPool(workers=2) exactly as the trainer uses it (worker
  processes, a 5 s hard limit per item, results shipped back as verdict dicts).
- math-verify runs in a 2-process multiprocessing pool; each item is its documented
  recipe: `parse(gold)`, `parse(completion)`, `verify(gold, answer)` with its default
  extraction configs and its own 5 s parsing/verification timeouts. The gold is given
  to it as `$gold$`, the form its README uses.
- Each timed run starts fresh pools (start-up and imports excluded from the time), so
  neither grader profits from a cache warmed by an earlier run; within a run rlvr's
  per-gold cache works as it would in training.

Run: PYTHONPATH=src python -m benchmarks.verifiers.bench_math [--runs 3] [--data FILE.jsonl]
     (--data tests/data/math_recall.jsonl: the recall suite of the red-team fixes)
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import platform
import statistics
import time
from pathlib import Path

from benchmarks import REPO
from rlvr.verifiers import Case, VerifierPool

LABELLED = REPO / "tests" / "data" / "math_labelled.jsonl"


def _mv_init() -> None:
    import math_verify  # noqa: F401  (imported once per worker, outside the timing)


def _mv_check(item: tuple[str, str]) -> bool:
    from math_verify import parse, verify
    completion, reference = item
    try:
        return bool(verify(parse(f"${reference}$"), parse(completion)))
    except Exception:
        return False


def run_rlvr(rows: list[dict]) -> tuple[list[bool], float]:
    cases = [Case("math", r["completion"], r["reference"]) for r in rows]
    with VerifierPool(workers=2, preload=["math"]) as pool:
        pool.start()
        start = time.perf_counter()
        verdicts = pool.verify(cases)
        elapsed = time.perf_counter() - start
    return [v.passed for v in verdicts], elapsed


def run_math_verify(rows: list[dict]) -> tuple[list[bool], float]:
    items = [(r["completion"], r["reference"]) for r in rows]
    context = multiprocessing.get_context("spawn")
    with context.Pool(2, initializer=_mv_init) as pool:
        pool.map(_mv_init_barrier, range(2))  # both workers imported before timing
        start = time.perf_counter()
        passed = pool.map(_mv_check, items, chunksize=1)
        elapsed = time.perf_counter() - start
    return passed, elapsed


def _mv_init_barrier(_: int) -> None:
    time.sleep(0.2)


def accuracy_by_category(rows: list[dict], passed: list[bool]) -> dict[str, float]:
    right: dict[str, list[bool]] = collections.defaultdict(list)
    for row, verdict in zip(rows, passed):
        right[row["category"]].append(verdict is row["expected"])
    table = {c: sum(v) / len(v) for c, v in sorted(right.items())}
    table["overall"] = sum(sum(v) for v in right.values()) / len(rows)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs per grader")
    parser.add_argument("--data", type=Path, default=LABELLED,
                        help="labelled pairs (JSONL with category, completion, reference, "
                             "expected, note)")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines()
            if line]
    # Huge expressions cost math-verify its full 5 s timeouts; timing the set without
    # them as well shows the everyday rate, where no grader waits on a timeout.
    ordinary = [r for r in rows if r["category"] != "huge"]
    times: dict[str, list[float]] = {"rlvr": [], "math-verify": []}
    ordinary_times: dict[str, list[float]] = {"rlvr": [], "math-verify": []}
    results: dict[str, list[bool]] = {}
    for _ in range(args.runs):
        for name, runner in (("rlvr", run_rlvr), ("math-verify", run_math_verify)):
            passed, elapsed = runner(rows)
            if name in results and results[name] != passed:
                print(f"warning: {name} verdicts differ between runs")
            results[name] = passed
            times[name].append(elapsed)
            ordinary_times[name].append(runner(ordinary)[1])
    acc = {name: accuracy_by_category(rows, passed) for name, passed in results.items()}
    print(f"machine: {platform.machine()} {multiprocessing.cpu_count()} cores; "
          f"{len(rows)} labelled pairs; {args.runs} runs (median)")
    print(f"{'category':<20}{'n':>4}{'rlvr':>8}{'math-verify':>13}")
    counts = collections.Counter(r["category"] for r in rows)
    for category in acc["rlvr"]:
        n = counts.get(category, len(rows))
        print(f"{category:<20}{n:>4}{acc['rlvr'][category]:>8.3f}{acc['math-verify'][category]:>13.3f}")
    worse = [c for c in acc["rlvr"] if acc["rlvr"][c] < acc["math-verify"][c]]
    if worse:
        print(f"rlvr less accurate than math-verify on: {', '.join(worse)}")
    for row, mine, theirs in zip(rows, results["rlvr"], results["math-verify"]):
        if theirs is not row["expected"]:
            print(f"  math-verify wrong [{row['category']}] {row['note']}")
        if mine is not row["expected"]:
            print(f"  rlvr wrong [{row['category']}] {row['note']}")
    correct = sum(r["expected"] for r in rows)
    for name, passed in results.items():
        paid = sum(p and r["expected"] for r, p in zip(rows, passed))
        false_positives = sum(p and not r["expected"] for r, p in zip(rows, passed))
        print(f"{name}: correct answers paid {paid}/{correct}, false positives "
              f"{false_positives}/{len(rows) - correct}")
    rate = {name: len(rows) / statistics.median(t) for name, t in times.items()}
    ordinary_rate = {name: len(ordinary) / statistics.median(t) for name, t in ordinary_times.items()}
    for label, table in (("all pairs", times), ("without huge", ordinary_times)):
        print(f"run times, {label} (s): rlvr {[round(t, 2) for t in table['rlvr']]} "
              f"math-verify {[round(t, 2) for t in table['math-verify']]}")
    print(f"throughput without the huge category ({len(ordinary)} pairs): "
          f"rlvr {ordinary_rate['rlvr']:.0f}/s math-verify {ordinary_rate['math-verify']:.0f}/s")
    print(f"accuracy: rlvr {acc['rlvr']['overall']:.3f} math-verify {acc['math-verify']['overall']:.3f}; "
          f"throughput: rlvr {rate['rlvr']:.0f}/s math-verify {rate['math-verify']:.0f}/s")


if __name__ == "__main__":
    main()
