"""What each kind of reward costs and how often it agrees with the strict checker, on the
same answers: the `math` checker, math-verify (`math_verify`), an LLM judge
(`rlvr judge-serve` serving SmolLM2-135M-Instruct, the `judge` verifier) and a learned
reward model (`reward_model`, e.g. the one bench_hacking.py trained).

    PYTHONPATH=src python -m benchmarks.verifiers.bench_reward_kinds --answers RUN/evals/step-000000.jsonl \\
        [--reward-model RUNS/hacking-.../rm-train/model] [--limit 48]

The answers are a held-out evaluation's greedy answers (prompt, reference, completion),
so they are what a policy writes, not made-up cases. Agreement is with `math`'s verdict
(passed or not; the reward model passes at score >= 0.5) and, free of any threshold,
how often a strict-passed answer scores above a strict-failed one. Each grader runs in this
process, one item at a time; the judge server runs alongside with one torch thread.
Last line: kinds: math X/s, math_verify X/s, judge X/s (T tokens/verdict), rm X/s;
agreement with math: ...
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

from benchmarks import REPO
from rlvr.verifiers.base import run_verifier
from rlvr.verifiers.registry import get_verifier


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_judge(model: str, port: int, threads: int) -> subprocess.Popen:
    server = subprocess.Popen([sys.executable, "-m", "rlvr", "judge-serve", model, "--port",
                               str(port), "--threads", str(threads)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
            return server
        except OSError:
            if server.poll() is not None:
                raise SystemExit(f"rlvr judge-serve {model} exited ({server.returncode})")
            time.sleep(1)
    server.kill()
    raise SystemExit("rlvr judge-serve did not answer /health within 300 s")


def grade(name: str, score: Callable[[dict], Any], items: list[dict],
          strict: list[bool] | None = None) -> dict[str, Any]:
    """Time `score` over the items (one at a time) and compare with the strict verdicts
    (None: this grader is the strict one). agreement: same passed/failed; ranking: the
    chance that a strict-passed answer scores above a strict-failed one (ties half),
    which does not depend on a pass threshold."""
    began = time.perf_counter()
    verdicts = [score(item) for item in items]
    seconds = time.perf_counter() - began
    passed = [v.passed for v in verdicts]
    strict = passed if strict is None else strict
    judged = [v.details.get("judge") or {} for v in verdicts]
    tokens = sum(j.get("prompt_tokens", 0) + j.get("completion_tokens", 0) for j in judged)
    good = [v.score for v, s in zip(verdicts, strict) if s]
    bad = [v.score for v, s in zip(verdicts, strict) if not s]
    ranking = (sum((g > b) + 0.5 * (g == b) for g in good for b in bad)
               / (len(good) * len(bad))) if good and bad else float("nan")
    return {"name": name, "per_s": len(items) / seconds, "seconds": seconds,
            "agreement": sum(p == s for p, s in zip(passed, strict)) / len(items),
            "ranking": ranking, "passed": sum(passed),
            "errors": sum(v.reason in ("error", "judge_unparseable", "judge_unavailable")
                          for v in verdicts),
            "tokens_per_verdict": tokens / len(items), "verdicts": verdicts}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--answers", required=True, help="an evals/step-N.jsonl of a run")
    p.add_argument("--reward-model", default="", help="an rm-train model dir (optional)")
    p.add_argument("--judge-model", default="smollm2-135m-instruct")
    p.add_argument("--limit", type=int, default=48)
    p.add_argument("--threads", type=int, default=1, help="the judge server's torch threads")
    args = p.parse_args()
    items = [json.loads(line) for line in
             Path(args.answers).read_text(encoding="utf-8").splitlines()][:args.limit]
    math = get_verifier("math")
    rows = [grade("math", lambda i: run_verifier(math, i["completion"], i["reference"],
                                                 i["prompt"]), items)]  # timed cold
    strict = [v.passed for v in rows[0]["verdicts"]]
    lenient = get_verifier("math_verify")
    rows.append(grade("math_verify", lambda i: lenient.verify(i["completion"], i["reference"]),
                      items, strict))
    if args.reward_model:
        rm = get_verifier("reward_model", model=args.reward_model)
        rm.verify(items[0]["completion"], None, prompt=items[0]["prompt"])  # load outside
        rows.append(grade("reward_model", lambda i: rm.verify(i["completion"], None,
                                                              prompt=i["prompt"]),
                          items, strict))
    port = free_port()
    server = start_judge(args.judge_model, port, args.threads)
    try:
        judge = get_verifier("judge", base_url=f"http://127.0.0.1:{port}/v1",
                             model=args.judge_model, structured=True, cache_size=0)
        rows.append(grade("judge", lambda i: judge.verify(i["completion"], i["reference"],
                                                          prompt=i["prompt"]), items, strict))
    finally:
        server.terminate()
        server.wait(timeout=30)
    for row in rows:
        row.pop("verdicts")
    print(json.dumps({"answers": args.answers, "items": len(items),
                      "strict_passed": sum(strict), "rows": rows}, indent=1))
    print("kinds: " + ", ".join(f"{r['name']} {r['per_s']:.3g}/s" for r in rows)
          + "; agreement with math (same verdict / ranks a passed answer above a failed "
          "one): " + ", ".join(f"{r['name']} {r['agreement']:.2f} / {r['ranking']:.2f}"
                               for r in rows[1:])
          + f"; judge tokens/verdict {rows[-1]['tokens_per_verdict']:.0f}")


if __name__ == "__main__":
    main()
