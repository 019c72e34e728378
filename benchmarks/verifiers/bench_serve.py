"""`rlvr serve` on loopback under a bounded request loop: throughput, latency, memory,
and a check that no verdict is lost, duplicated or wrong.

    PYTHONPATH=src python -m benchmarks.verifiers.bench_serve                 # 10,000 math + 1,000 code
    PYTHONPATH=src python -m benchmarks.verifiers.bench_serve --math 500 --code 50 --hostile 10

The server is `rlvr serve --port 0` in a subprocess (`--workers`, default every core;
math and code preloaded). The cases (benchmarks/tools/serve_cases.py) are math answers right
and wrong, small functions right and wrong, and hostile code (fork bombs, memory
floods, infinite loops, exit-0 and always-equal hacks) shuffled in among them. They are
sent `--batch` items a request with at most `--concurrency` requests in flight; a 429
is retried after its Retry-After. Latency is per request, from send to answer.
Peak memory is the largest RSS summed over the server's process tree (server, verifier
workers, sandboxes), sampled every 0.2 s.

Checks, after the server stops: every case got exactly one verdict (lost, duplicated);
each verdict equals the one `rlvr verify`'s pool gives the same case in this process
(score, passed and reason; hostile code: score and passed, since which of timeout or
crash ends it may differ) and the label the case was built with (hostile: score 0).
Both count as wrong, and so does a case answered twice. Exit 1 unless nothing is lost, duplicated or wrong.
Last line: serve: N verdicts, L lost, W wrong, X/s, p99 P ms
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import threading
import time

from benchmarks.tools.serve_cases import Labelled, build
from benchmarks.tools.serve_process import start_server
from rlvr.verifiers.contract import parse_case, verdict_from_line
from rlvr.verifiers.pool import VerifierPool, default_workers

JSON = {"Content-Type": "application/json"}  # rlvr serve refuses other POSTs (415)


class PeakRss(threading.Thread):
    """The largest RSS of a process and its descendants, summed, while running."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        import psutil

        self.root, self.peak, self.stop = psutil.Process(pid), 0, threading.Event()

    def run(self) -> None:
        import psutil

        while not self.stop.is_set():
            total = 0
            try:
                for proc in [self.root, *self.root.children(recursive=True)]:
                    try:
                        total += proc.memory_info().rss
                    except psutil.Error:
                        pass
            except psutil.Error:
                return
            self.peak = max(self.peak, total)
            self.stop.wait(0.2)


async def drive(url: str, cases: list[Labelled], batch: int, concurrency: int
                ) -> tuple[list[list[dict]], list[float], int, float]:
    """Send every case; per case the verdict lines received (normally exactly one),
    per-request latencies (s), 429s seen, and the wall time."""
    import httpx

    received: list[list[dict]] = [[] for _ in cases]
    latencies: list[float] = []
    refused = 0
    chunks = iter(range(0, len(cases), batch))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async def sender(client: httpx.AsyncClient) -> None:
        nonlocal refused
        for first in chunks:  # a shared iterator: the loop stays bounded
            indices = range(first, min(first + batch, len(cases)))
            body = json.dumps({"items": [cases[i].line for i in indices]})
            while True:
                start = time.perf_counter()
                answer = await client.post(url + "/verify", content=body, headers=JSON)
                if answer.status_code != 429:
                    break
                refused += 1
                await asyncio.sleep(float(answer.headers.get("retry-after", "1")))
            latencies.append(time.perf_counter() - start)
            answer.raise_for_status()
            for i, line in zip(indices, answer.json()["verdicts"], strict=True):
                received[i].append(line)

    async with httpx.AsyncClient(timeout=600, limits=limits) as client:
        start = time.perf_counter()
        await asyncio.gather(*(sender(client) for _ in range(concurrency)))
        wall = time.perf_counter() - start
    return received, latencies, refused, wall


def reference_verdicts(cases: list[Labelled], workers: int) -> list[dict]:
    """What `rlvr verify` gives each case: the same pool, in this process."""
    with VerifierPool(workers=workers, preload=["math", "code"]) as pool:
        verdicts = pool.start().verify([parse_case(c.line, "bench") for c in cases])
    return [v.to_dict() for v in verdicts]


def wrong_items(cases: list[Labelled], got: list[dict | None], expected: list[dict]
                ) -> list[tuple[int, str]]:
    wrong = []
    for i, (case, line, want) in enumerate(zip(cases, got, expected)):
        if line is None:
            continue  # counted as lost
        verdict = verdict_from_line(line)
        keys = ("score", "passed") if case.kind == "hostile" else ("score", "passed", "reason")
        if any(line.get(k) != want[k] for k in keys):
            wrong.append((i, f"differs from rlvr verify: {want['reason']} vs {verdict.reason}"))
        elif verdict.passed != case.passed or (case.kind == "hostile" and verdict.score != 0):
            wrong.append((i, f"against its label: {case.kind} scored {verdict.score}"))
    return wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--math", type=int, default=10_000)
    parser.add_argument("--code", type=int, default=1_000)
    parser.add_argument("--hostile", type=int, default=50, help="hostile code cases")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16, help="items a request")
    parser.add_argument("--workers", type=int, default=0, help="server workers (0: every "
                        "core)")
    args = parser.parse_args()
    workers = args.workers or default_workers()
    cases = build(args.math, args.code, args.hostile)
    process, url = start_server(workers, "math,code")
    meter = PeakRss(process.pid)
    meter.start()
    try:
        received, latencies, refused, wall = asyncio.run(
            drive(url, cases, args.batch, args.concurrency))
    finally:
        meter.stop.set()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    lost = sum(1 for r in received if not r)
    duplicated = sum(1 for r in received if len(r) > 1)
    got = [r[0] if r else None for r in received]
    print(f"graded over HTTP in {wall:.1f} s; checking against rlvr verify's pool ...",
          flush=True)
    began = time.perf_counter()  # the peer: the same cases through rlvr verify's pool
    expected = reference_verdicts(cases, workers)
    pool_wall = time.perf_counter() - began
    wrong = wrong_items(cases, got, expected)
    for index, why in wrong[:10]:
        print(f"  wrong: case {index} {json.dumps(cases[index].line)[:160]}: {why}")
    n, ms = len(cases), sorted(x * 1000 for x in latencies)
    p50, p99 = statistics.median(ms), ms[max(0, -(-99 * len(ms) // 100) - 1)]
    print(f"cases: {args.math} math, {args.code} code, {args.hostile} hostile; "
          f"{workers} server workers; {len(latencies)} requests of <= {args.batch} items, "
          f"{args.concurrency} in flight; {refused} answered 429")
    print(f"latency per request: p50 {p50:.0f} ms, p99 {p99:.0f} ms, max {ms[-1]:.0f} ms; "
          f"server peak RSS (process tree) {meter.peak / 2**20:.0f} MiB; "
          f"{duplicated} duplicated")
    print(f"peer: rlvr verify's pool in this process, same cases and workers: "
          f"{n / pool_wall:.0f}/s ({pool_wall:.1f} s); over HTTP at "
          f"{(n / wall) / (n / pool_wall):.2f}x of it")
    print(f"serve: {n} verdicts, {lost} lost, {len(wrong) + duplicated} wrong, "
          f"{n / wall:.0f}/s, p99 {p99:.0f} ms")
    return 0 if not (lost or wrong or duplicated) else 1


if __name__ == "__main__":
    raise SystemExit(main())
