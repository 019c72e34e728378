"""Learners with no solution logic against the code sandbox's channels between checks:
how many items of a task they are paid for, through `rlvr verify` and `rlvr serve`.

    PYTHONPATH=src python -m benchmarks.redteam.bench_redteam_sandbox            # 30 items each
    PYTHONPATH=src python -m benchmarks.redteam.bench_redteam_sandbox --items 8 --routes verify

The learners (benchmarks/redteam/sandbox_learners.py) keep what they learnt about the
task's six hidden booleans in the host's page cache (read with RWF_NOWAIT, or by counting
major page faults) or in the wall-clock moment a check ends. Each is graded on `--items`
identical items, one after another, through `rlvr verify --workers 1` (a JSONL file) and
through `rlvr serve --workers 1` (one item a request): one worker is where a channel
between consecutive checks is most reliable. A learner that carries nothing passes an
item by chance one time in 64.

The timing learner is sensitive to machine load: the load average is printed at the
start and the end. Takes about 5 minutes with the defaults (the timing learner waits up
to 3.2 s per answer to end at its chosen moment).
Last line: sandbox channels: page-cache P/N, page-fault F/N, timing T/N paid
(each the larger of its two routes' counts; the goal is at most 2 of 30).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import REPO
from benchmarks.redteam import sandbox_learners
from benchmarks.tools.serve_process import start_server

SRC = str(REPO / "src")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
TIMEOUT_S = 20  # a timing learner's check waits up to three times 3.2 s


def cases(name: str, items: int) -> list[dict]:
    code = sandbox_learners.LEARNERS[name]()
    reference = sandbox_learners.task(timeout_s=TIMEOUT_S)
    return [{"verifier": "code", "completion": code, "reference": reference,
             "timeout_s": TIMEOUT_S + 10} for _ in range(items)]


def paid(lines: list[dict]) -> int:
    return sum(1 for line in lines if line.get("passed") is True)


def through_verify(items: list[dict], workers: int) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="rlvr-redteam-") as tmp:
        source, target = Path(tmp) / "cases.jsonl", Path(tmp) / "verdicts.jsonl"
        source.write_text("".join(json.dumps(item) + "\n" for item in items))
        subprocess.run([sys.executable, "-m", "rlvr", "verify", "--input", str(source),
                        "--output", str(target), "--workers", str(workers)],
                       env=ENV, check=False, stdout=subprocess.DEVNULL)
        return [json.loads(line) for line in target.read_text().splitlines()]


def through_serve(url: str, items: list[dict]) -> list[dict]:
    from rlvr.serve.client import ServeClient

    with ServeClient(url, batch_size=1, concurrency=1) as client:
        return [client.verify([item])[0] for item in items]


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=30)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--routes", default="verify,serve")
    parser.add_argument("--learners", default=",".join(sandbox_learners.LEARNERS))
    args = parser.parse_args()
    from rlvr.verifiers.code import packages, sandbox

    print(f"load average at start: {load()}")
    if hasattr(sandbox, "file_view"):  # absent before the files were copies
        print(f"sandbox files: {sandbox.file_view(packages.resolve(('numpy',))).status}")
    routes = args.routes.split(",")
    server = url = None
    if "serve" in routes:
        server, url = start_server(args.workers, "code")
    results: dict[str, int] = {}
    try:
        for name in args.learners.split(","):
            counts = []
            for route in routes:
                started = time.monotonic()
                items = cases(name, args.items)
                lines = (through_verify(items, args.workers) if route == "verify"
                         else through_serve(url, items))
                counts.append(paid(lines))
                reasons = sorted({line.get("reason") for line in lines})
                print(f"{name} via {route}: {counts[-1]}/{args.items} paid "
                      f"({time.monotonic() - started:.0f} s; reasons {reasons})", flush=True)
            results[name] = max(counts)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    print(f"load average at end: {load()}")
    print("sandbox channels: " + ", ".join(f"{name} {count}/{args.items}"
                                           for name, count in results.items()) + " paid")


if __name__ == "__main__":
    main()
