"""The Ray verifier pool (reward.backend=ray) against the process pool on one machine:
start-up, the fixed cost of a small batch, and verdicts/s on the same mixed batch.

    PYTHONPATH=src python -m benchmarks.verifiers.bench_ray_verifiers [--workers 2] [--runs 3]

Needs Ray (`pip install 'rlvr[ray]'`). Both pools get `--workers` workers and the same
preloads; the Ray pool starts its own local Ray (`ray.init` is timed apart from the
actors). The batch: math (right and wrong), exact, and sandboxed code items, as a
training step would send them; each pool grades it `--runs` times, interleaved, and the
median is reported. "Batch overhead" is the median time of a batch of 8 trivial exact
items, i.e. what one `verify` call costs beyond the checks themselves. On one machine
Ray can only add overhead; it pays off when its actors run on other machines' cores.
Last line: ray_verifiers: process X verdicts/s, ray Y verdicts/s (...)
"""

from __future__ import annotations

import argparse
import statistics
import time

from rlvr.verifiers.pool import Case, VerifierPool

ADD_TEST = {"test": "def check(candidate):\n    assert candidate(1, 2) == 3\n"
                    "    assert candidate(-4, 4) == 0\n", "entry_point": "add"}
PRELOAD = ("math", "exact", "code")


def mixed_batch(n_math: int = 96, n_exact: int = 96, n_code: int = 16) -> list[Case]:
    cases = []
    for i in range(n_math):
        answer = f"\\frac{{{i + 1}}}{{{i + 2}}}"
        given = answer if i % 2 else f"{i + 1}/{i + 3}"
        cases.append(Case("math", f"The result is $\\boxed{{{given}}}$.", answer))
    for i in range(n_exact):
        cases.append(Case("exact", f"Adding them: #### {i + (i % 3 == 0)}", str(i)))
    for i in range(n_code):
        body = "return a + b" if i % 2 else "return a - b"
        cases.append(Case("code", f"```python\ndef add(a, b):\n    {body}\n```", ADD_TEST))
    return cases


def timed(pool, cases: list[Case]) -> tuple[float, list]:
    start = time.perf_counter()
    verdicts = pool.verify(cases)
    return time.perf_counter() - start, verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    import ray

    from rlvr.verifiers.ray_pool import RayVerifierPool

    batch, small = mixed_batch(), [Case("exact", "#### 1", "1")] * 8
    start = time.perf_counter()
    process = VerifierPool(workers=args.workers, preload=PRELOAD).start()
    process_start = time.perf_counter() - start
    start = time.perf_counter()
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    ray_init = time.perf_counter() - start
    start = time.perf_counter()
    actors = RayVerifierPool(workers=args.workers, preload=PRELOAD).start()
    actors_start = time.perf_counter() - start
    try:
        for pool in (process, actors):  # warm: the first code check starts its sandboxes
            pool.verify(batch[:4] + batch[-4:])
        seconds: dict[str, list[float]] = {"process": [], "ray": []}
        verdicts = {}
        for _ in range(args.runs):
            for name, pool in (("process", process), ("ray", actors)):
                elapsed, verdicts[name] = timed(pool, batch)
                seconds[name].append(elapsed)
        overhead = {name: statistics.median(timed(pool, small)[0] for _ in range(20))
                    for name, pool in (("process", process), ("ray", actors))}
    finally:
        process.close()
        actors.close()
        ray.shutdown()
    same = [(v.passed, v.score, v.reason) for v in verdicts["process"]] == \
        [(v.passed, v.score, v.reason) for v in verdicts["ray"]]
    rate = {name: len(batch) / statistics.median(s) for name, s in seconds.items()}
    print(f"batch: {len(batch)} items (math, exact, code), {args.workers} workers, "
          f"median of {args.runs}")
    print(f"start: process pool {process_start:.2f} s; ray.init {ray_init:.2f} s + "
          f"actors {actors_start:.2f} s")
    for name in ("process", "ray"):
        print(f"{name:8s} {rate[name]:7.1f} verdicts/s  (runs: "
              f"{', '.join(f'{s:.2f}' for s in seconds[name])} s); batch of 8 trivial "
              f"items: {overhead[name] * 1000:.1f} ms")
    print(f"ray_verifiers: process {rate['process']:.1f} verdicts/s, ray "
          f"{rate['ray']:.1f} verdicts/s ({rate['ray'] / rate['process']:.2f}x), start "
          f"{process_start:.2f} s vs {ray_init + actors_start:.2f} s, 8-item batch "
          f"{overhead['process'] * 1000:.1f} vs {overhead['ray'] * 1000:.1f} ms, "
          f"verdicts {'identical' if same else 'DIFFER'}")


if __name__ == "__main__":
    main()
