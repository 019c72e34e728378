"""Asynchronous rollouts (rollout.max_staleness=K) against synchronous ones
(max_staleness=0): seconds per step, and held-out accuracy after the same training time.

    python -m benchmarks.systems.bench_async                           # arithmetic, K=1
    python -m benchmarks.systems.bench_async --workload remote-verifier --latency 0.25
    python -m benchmarks.systems.bench_async --workload remote-verifier \\
        --plugin mypkg.graders:MyRemoteGrader reward.options='{url: ...}'
    python -m benchmarks.systems.bench_async --k 2 --seconds 300 sampling.group_size=4
    python -m benchmarks.systems.bench_async --workload remote-verifier --pairs 2 \\
        --async-set algorithm.old_logprobs_from_update=true

Workloads (both configs/learning_arithmetic.yaml: SmolLM2-135M-Instruct on arithmetic,
held-out greedy accuracy graded by the math verifier on data.eval_size problems):

  arithmetic       the config as it is: the math verifier, a small share of the step.
  remote-verifier  the reward is a verifier plugin that waits per item: by default
                   benchmarks/systems/remote_verifier.py, a *stand-in* for a remote
                   grading service (math's verdict after --latency seconds of sleep, no
                   CPU), or the operator's own (--plugin MODULE:CLASS, reward.options
                   given as an override). Verification is then a large share of a
                   synchronous step; with K >= 1 the producer grades while the trainer
                   updates. The held-out evaluation stays math (eval.verifier=math).

Both runs are `rlvr train` as a user runs it, with the same config but
rollout.max_staleness, the same training seconds (max_seconds=--seconds; evaluations
are paused out of that clock) and only the before/after held-out evaluations (greedy,
the same problems and verifier): no evaluation in between, during which the producer
could sample ahead off the clock. s/step is the mean time/step over steps 2..N (step 1
of K >= 1 includes the producer's start-up). Held-out accuracy is each run's
evaluation at the end (the first at or after --seconds in its evals.jsonl). On the
2-core development machine the producer and the trainer share the cores, so the
arithmetic workload measures little but overhead; the remote-verifier one shows the
overlap. Last line:

    async: WORKLOAD K=k s/step A vs sync B (xR), held-out at T s: async C vs sync D, staleness mean M max X

(R = B / A: how many times faster async steps are.) With --pairs N the two sides run
alternately N times (sync, async, sync, async ...): A and B are the medians of the
pairs' s/step, C and D the means of their held-out accuracies, and each pair's own line
is printed first. --async-set KEY=VALUE gives a config override to the asynchronous
side only (recorded in the results file).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from benchmarks import REPO, RESULTS

CONFIG = REPO / "configs" / "learning_arithmetic.yaml"
STAND_IN = "benchmarks.systems.remote_verifier:RemoteVerifierStandIn"
WORKLOADS = ("arithmetic", "remote-verifier")

Rows = Sequence[dict[str, Any]]


# --- pure parts (tests/test_bench_async.py) ------------------------------------------

def speed_ratio(async_s_per_step: float, sync_s_per_step: float) -> float:
    """How many times faster the asynchronous steps are (sync s/step / async s/step)."""
    return sync_s_per_step / async_s_per_step if async_s_per_step > 0 else float("inf")


def seconds_per_step(metrics: Rows) -> float:
    """Mean time/step over steps 2..N (step 1: start-up; a one-step run: that step)."""
    rows = list(metrics[1:]) or list(metrics)
    return sum(m["time/step"] for m in rows) / len(rows) if rows else float("nan")


def held_out_at(evals: Rows, seconds: float) -> dict[str, Any]:
    """The evaluation standing for `seconds` of training: the first taken at or after
    it (a run's final one, after the step that crossed max_seconds), else the last (the
    run's steps ran out before)."""
    if not evals:
        raise ValueError("no held-out evaluation in evals.jsonl (data.eval_size=0?)")
    later = [e for e in evals if e["train_seconds"] >= seconds]
    return later[0] if later else evals[-1]


def staleness(metrics: Rows) -> tuple[float, int]:
    """(mean of the steps' staleness/mean, max of their staleness/max) of an async run."""
    if not metrics:
        return float("nan"), 0
    mean = sum(m.get("staleness/mean", 0.0) for m in metrics) / len(metrics)
    return mean, int(max(m.get("staleness/max", 0.0) for m in metrics))


def combine_pairs(sides: Rows) -> dict[str, Any]:
    """One side's runs over the pairs: the median s/step (a run's s/step varies with the
    machine's moment; the median leaves out one disturbed run), the mean held-out
    accuracy (the question is the expected accuracy, not the typical one), the mean of
    the staleness means and the largest staleness."""
    if not sides:
        raise ValueError("no runs to combine")
    return {"s_per_step": statistics.median(r["s_per_step"] for r in sides),
            "held_out": statistics.fmean(r["held_out"] for r in sides),
            "staleness_mean": statistics.fmean(r["staleness_mean"] for r in sides),
            "staleness_max": max(r["staleness_max"] for r in sides), "runs": len(sides)}


def result_line(workload: str, k: int, async_s: float, sync_s: float, seconds: float,
                async_acc: float, sync_acc: float, stale_mean: float, stale_max: int) -> str:
    return (f"async: {workload} K={k} s/step {async_s:.2f} vs sync {sync_s:.2f} "
            f"(x{speed_ratio(async_s, sync_s):.2f}), held-out at {seconds:g} s: async "
            f"{async_acc:.3f} vs sync {sync_acc:.3f}, staleness mean {stale_mean:.2f} "
            f"max {stale_max}")


def workload_overrides(workload: str, plugin: str, latency_s: float) -> list[str]:
    """The config overrides of a workload (both sides)."""
    if workload == "arithmetic":
        return []
    if workload != "remote-verifier":
        raise ValueError(f"unknown workload {workload!r} (one of {', '.join(WORKLOADS)})")
    reward = [f"reward.plugins=[{plugin}]", f"reward.verifier={plugin}", "eval.verifier=math"]
    if plugin == STAND_IN:
        reward.append(f"reward.options={{latency_s: {latency_s:g}}}")
    return reward


# --- the runs ------------------------------------------------------------------------

def rlvr(args: list[str]) -> None:
    """`rlvr ...` in a child process; src for rlvr, the repository root for a plugin
    under benchmarks/ (verifier workers inherit the path)."""
    path = os.pathsep.join([str(REPO / "src"), str(REPO)])
    env = {**os.environ, "PYTHONPATH": path}
    done = subprocess.run([sys.executable, "-m", "rlvr", args[0], "--quiet", *args[1:]],
                          env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"rlvr {' '.join(args)} failed:\n{done.stderr[-3000:]}")


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def side(run: Path, seconds: float) -> dict[str, Any]:
    """One run's numbers: s/step, the held-out evaluation at `seconds`, staleness."""
    metrics, evals = read_lines(run / "metrics.jsonl"), read_lines(run / "evals.jsonl")
    mean = lambda key: sum(m.get(key, 0.0) for m in metrics) / max(1, len(metrics))  # noqa: E731
    at = held_out_at(evals, seconds)
    stale_mean, stale_max = staleness(metrics)
    return {"steps": len(metrics), "s_per_step": seconds_per_step(metrics),
            "held_out": float(at["greedy/accuracy"]), "held_out_step": at["step"],
            "held_out_train_seconds": at["train_seconds"],
            "held_out_before": float(evals[0]["greedy/accuracy"]),
            "generate_s": mean("time/generate"), "verify_s": mean("time/verify"),
            "update_s": mean("time/update"), "trainer_idle_s": mean("time/trainer_idle"),
            "producer_idle_s": mean("time/producer_idle"),
            "staleness_mean": stale_mean, "staleness_max": stale_max}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workload", choices=WORKLOADS, default="arithmetic")
    parser.add_argument("--k", type=int, default=1, help="rollout.max_staleness of the "
                        "asynchronous side (>= 1)")
    parser.add_argument("--seconds", type=float, default=600.0,
                        help="training seconds of each side (max_seconds)")
    parser.add_argument("--latency", type=float, default=0.25,
                        help="remote-verifier stand-in: seconds per item")
    parser.add_argument("--plugin", default=STAND_IN, metavar="MODULE:CLASS",
                        help="remote-verifier: the reward's verifier plugin")
    parser.add_argument("--config", default=str(CONFIG))
    parser.add_argument("--root", default="/tmp/rlvr-bench-async")
    parser.add_argument("--pairs", type=int, default=1,
                        help="sync/async pairs, run alternately (medians reported)")
    parser.add_argument("--async-set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override for the asynchronous side only")
    parser.add_argument("overrides", nargs="*", help="config overrides for both runs")
    args = parser.parse_args(argv)
    if args.k < 1:
        parser.error("--k must be >= 1 (0 is the synchronous side)")
    if not args.seconds > 0:
        parser.error("--seconds must be > 0")
    if args.pairs < 1:
        parser.error("--pairs must be >= 1")
    return args


def common_overrides(args: argparse.Namespace) -> list[str]:
    """Both sides' overrides: the training seconds, no checkpoint or evaluation but the
    before/after ones (greedy only), the workload's, the operator's."""
    return [f"max_seconds={args.seconds:g}", "checkpoint_every=0", "eval.every=0",
            "eval.every_s=0", "eval.n=0",
            *workload_overrides(args.workload, args.plugin, args.latency), *args.overrides]


def run_side(name: str, run: Path, args: argparse.Namespace, overrides: list[str]
             ) -> dict[str, Any]:
    """One `rlvr train` of a side, and its numbers (printed as they come)."""
    rlvr(["train", "--run-dir", str(run), *overrides])
    numbers = side(run, args.seconds)
    rounded = {key: round(v, 4) if isinstance(v, float) else v for key, v in numbers.items()}
    print(f"{name:5s} {json.dumps(rounded)}", flush=True)
    return numbers


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    root = Path(args.root) / time.strftime("%Y%m%d-%H%M%S")
    common = ["--config", args.config, *common_overrides(args)]
    report: dict[str, Any] = {"workload": args.workload, "k": args.k,
                              "seconds": args.seconds, "root": str(root), "args": common,
                              "async_args": args.async_set, "pairs": []}
    for pair in range(args.pairs):
        sides = {}
        for name, extra in (("sync", ["rollout.max_staleness=0"]),
                            ("async", [f"rollout.max_staleness={args.k}", *args.async_set])):
            sides[name] = run_side(name, root / f"{name}-{pair}", args, [*common, *extra])
        report["pairs"].append(sides)
        a, s = sides["async"], sides["sync"]
        print(result_line(args.workload, args.k, a["s_per_step"], s["s_per_step"],
                          args.seconds, a["held_out"], s["held_out"], a["staleness_mean"],
                          a["staleness_max"]), flush=True)
    for name in ("sync", "async"):
        report[name] = combine_pairs([p[name] for p in report["pairs"]])
    out = RESULTS / time.strftime(f"async-{args.workload}-%Y%m%d-%H%M.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(f"results: {out}")
    a, s = report["async"], report["sync"]
    print(result_line(args.workload, args.k, a["s_per_step"], s["s_per_step"], args.seconds,
                      a["held_out"], s["held_out"], a["staleness_mean"], a["staleness_max"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
