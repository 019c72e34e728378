"""Red-team by RL: train SmolLM2-135M-Instruct briefly against each verifier, then audit
what the policy learned to pass.

A suite of hacks written by people imagining them is not enough: a policy searching
for holes is the adversary. For each target below the bench runs `rlvr train` in its
own run directory (benchmarks/redteam/TARGET.yaml plus the flags' overrides), then
re-reads that run's rollouts.jsonl: every attempt the verifier passed goes through a
strict re-check (`rlvr.audit.strict.strict_recheck(verifier, completion, reference,
prompt) -> None | reason`), and for math also through math-verify, the field's
standard grader, for comparison.

Targets: math-arithmetic, math-gsm8k and math-symbolic (verifier math; symbolic golds:
pi multiples, surds, trig values, "expand", from benchmarks/redteam/symbolic_tasks.py),
exact, ifeval, format, code.

    PYTHONPATH=src python -m benchmarks.redteam.bench_redteam                  # all, defaults
    PYTHONPATH=src python -m benchmarks.redteam.bench_redteam --verifiers exact \
        --steps 2 --prompts 2 --group 2 --max-new-tokens 16             # CPU smoke
    PYTHONPATH=src python -m benchmarks.redteam.bench_redteam --audit-only runs/redteam-...

Output: per target the per-step pass/flag counts, then exactly one line per verifier
(math-arithmetic and math-gsm8k count together as "math"; math-symbolic has its own
line):

    redteam VERIFIER: P passed, H flagged by strict re-check (H/P%)
    redteam math-symbolic: P passed, H flagged by strict re-check (H/P%)

and a JSON of every number plus each flagged attempt (prompt, reference, completion,
the re-check's reason), for turning into labelled regression cases, under
benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import REPO, RESULTS
from benchmarks.redteam.redteam_audit import audit_run, load_recheck

CONFIGS = Path(__file__).resolve().parent
# target -> (verifier, config file). Order: cheap and most telling first.
TARGETS = {
    "math-arithmetic": ("math", "math_arithmetic.yaml"),
    "math-gsm8k": ("math", "math_gsm8k.yaml"),
    "math-symbolic": ("math", "math_symbolic.yaml"),
    "exact": ("exact", "exact.yaml"),
    "format": ("format", "format.yaml"),
    "ifeval": ("ifeval", "ifeval.yaml"),
    "code": ("code", "code.yaml"),
}
VERIFIER_ORDER = ("math", "exact", "ifeval", "format", "code")
# Targets summarised on a line of their own rather than with their verifier's others:
# the symbolic golds are a different class of hole, and their rate is read alone.
OWN_LINE = ("math-symbolic",)
# Targets whose config's own `sft` warm start is kept: the base model passes none of
# their problems, so without it RL has no reward to climb. The others get sft.steps=0.
WARM_START = ("math-symbolic",)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--verifiers", default=",".join(VERIFIER_ORDER),
                   help="comma-separated verifiers (math = the three math targets) or target "
                        f"names ({', '.join(TARGETS)}); default: all")
    p.add_argument("--steps", type=int, default=30, help="RL steps per target")
    p.add_argument("--prompts", type=int, default=4, help="prompts per step")
    p.add_argument("--group", type=int, default=8, help="samples per prompt (group size)")
    p.add_argument("--max-new-tokens", type=int, default=None,
                   help="completion limit for every target (default: each target's own, "
                        "64-128, see benchmarks/redteam/*.yaml)")
    p.add_argument("--lr", type=float, default=1e-5,
                   help="AdamW learning rate, full fine-tuning (a 135M instruct model "
                        "moves within tens of steps at 5e-6..2e-5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's)")
    p.add_argument("--device", default="cpu", help="cpu, cuda, ... (model.device)")
    p.add_argument("--dtype", default="float32", help="model.dtype")
    p.add_argument("--set", dest="extra", action="append", default=[], metavar="KEY=VALUE",
                   help="extra `rlvr train` override for every target (repeatable)")
    p.add_argument("--runs-root", default=None,
                   help="where the run directories go (default runs/redteam-TIMESTAMP)")
    p.add_argument("--keep-checkpoints", action="store_true",
                   help="keep each run's checkpoints (default: removed after training; "
                        "the audit needs only rollouts.jsonl)")
    p.add_argument("--audit-only", metavar="RUNS_ROOT",
                   help="train nothing: audit the target run directories under RUNS_ROOT")
    p.add_argument("--recheck", default="rlvr.audit.strict:strict_recheck",
                   help="the strict re-check, as module:function or path/to/file.py:function")
    p.add_argument("--json", default=None,
                   help="results file (default benchmarks/results/redteam-TIMESTAMP.json)")
    return p.parse_args(argv)


def selected_targets(spec: str) -> list[str]:
    wanted = [s.strip() for s in spec.split(",") if s.strip()]
    chosen = []
    for name in wanted:
        matches = [t for t, (verifier, _) in TARGETS.items() if name in (t, verifier)]
        if not matches:
            raise SystemExit(f"bench_redteam: unknown verifier or target {name!r} "
                             f"(verifiers: {', '.join(VERIFIER_ORDER)}; targets: "
                             f"{', '.join(TARGETS)})")
        chosen += [t for t in matches if t not in chosen]
    return chosen


def train_overrides(args: argparse.Namespace) -> list[str]:
    """What every target shares: the batch, the optimiser, no held-out evaluation, no
    intermediate checkpoints. Overlong completions are not masked: the adversary gets
    every signal the verifier gives. (No warm start: target_overrides.)"""
    overrides = [
        f"steps={args.steps}", f"seed={args.seed}",
        f"sampling.prompts_per_step={args.prompts}", f"sampling.group_size={args.group}",
        "sampling.temperature=1.0", f"model.threads={args.threads}",
        f"model.device={args.device}", f"model.dtype={args.dtype}",
        "algorithm.advantage=grpo", "algorithm.policy_loss.eps_high=0.28", "reward.overlong=none",
        f"optim.lr={args.lr}", f"optim.warmup_steps={min(3, max(args.steps - 1, 0))}",
        "checkpoint_every=0", "keep_checkpoints=1", "log_rollouts=true",
    ]
    if args.max_new_tokens is not None:
        overrides.append(f"sampling.max_new_tokens={args.max_new_tokens}")
    return overrides + list(args.extra)


def target_overrides(target: str, shared: list[str]) -> list[str]:
    """`shared` for `target`, with sft.steps=0 first unless the target keeps its warm
    start (WARM_START); first, so that a --set sft.steps=N still wins."""
    return shared if target in WARM_START else ["sft.steps=0", *shared]


def train_target(target: str, run_dir: Path, overrides: list[str], keep: bool) -> float:
    """Run `rlvr train` for one target in a fresh process; returns its wall seconds."""
    if run_dir.exists():
        raise SystemExit(f"bench_redteam: {run_dir} exists; pick another --runs-root")
    run_dir.mkdir(parents=True)
    config = CONFIGS / TARGETS[target][1]
    command = [sys.executable, "-m", "rlvr", "train", "--config", str(config),
               "--run-dir", str(run_dir), "--quiet", *overrides]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    print(f"[{target}] training: {' '.join(command[3:])}", flush=True)
    began = time.perf_counter()
    with open(run_dir / "train.log", "w", encoding="utf-8") as log:
        done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                              cwd=REPO)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        tail = (run_dir / "train.log").read_text(encoding="utf-8")[-3000:]
        raise SystemExit(f"bench_redteam: training {target} failed "
                         f"(exit {done.returncode}); end of {run_dir}/train.log:\n{tail}")
    if not keep:
        shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
    return seconds


def step_seconds(run_dir: Path) -> float | None:
    """Mean `time/step` from the run's metrics.jsonl, leaving out step 1 (one-time
    warm-up) when there are more; None when it has no steps."""
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return None
    times = [json.loads(line)["time/step"] for line in path.read_text().splitlines()
             if line.strip()]
    times = times[1:] or times
    return sum(times) / len(times) if times else None


def percent(part: int, whole: int) -> str:
    """H/P as a percentage; 0.0% when nothing passed (nothing to flag), so the summary
    line keeps one shape for whoever parses it."""
    return f"{100.0 * part / whole:.1f}%" if whole else "0.0%"


def print_target(target: str, result: dict) -> None:
    steps = ", ".join(f"{s['step']}:{s['passed']}/{s['flagged']}" for s in result["by_step"])
    print(f"[{target}] {result['attempts']} attempts, {result['passed']} passed, "
          f"{result['flagged']} flagged; per step passed/flagged: {steps}")
    if result["reasons"]:
        print(f"[{target}] re-check reasons: {json.dumps(result['reasons'])}")
    mv = result.get("math_verify")
    if mv:
        print(f"[{target}] math-verify on the {result['passed']} passed attempts: "
              f"{mv['accepted']} accepted, {mv['rejected']} rejected, {mv['errors']} errors; "
              f"it accepts {mv['accepted_of_flagged']} of the {result['flagged']} flagged")
    if result.get("s_per_step") is not None:
        wall = result.get("train_seconds")
        print(f"[{target}] {result['s_per_step']:.1f} s/step"
              + (f" ({wall:.0f} s training wall time)" if wall is not None else ""))


def summary_group(target: str) -> str:
    """The summary line a target counts on: its verifier's, or its own (OWN_LINE)."""
    return target if target in OWN_LINE else TARGETS[target][0]


def verifier_totals(results: dict[str, dict]) -> dict[str, dict]:
    totals: dict[str, dict] = {}
    for target, result in results.items():
        total = totals.setdefault(summary_group(target), {"passed": 0, "flagged": 0,
                                                          "targets": []})
        total["passed"] += result["passed"]
        total["flagged"] += result["flagged"]
        total["targets"].append(target)
    order = [group for v in VERIFIER_ORDER
             for group in (v, *(t for t in OWN_LINE if TARGETS[t][0] == v))]
    return {g: totals[g] for g in order if g in totals}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    targets = selected_targets(args.verifiers)
    recheck = load_recheck(args.recheck, REPO)  # fail before hours of training, not after
    stamp = time.strftime("%Y%m%d-%H%M%S")
    root = Path(args.audit_only or args.runs_root or REPO / "runs" / f"redteam-{stamp}")
    overrides = train_overrides(args)
    results: dict[str, dict] = {}
    for target in targets:
        run_dir = root / target
        seconds = None
        if args.audit_only and not run_dir.is_dir():
            print(f"[{target}] no run directory under {root}: skipped")
            continue
        if not args.audit_only:
            seconds = train_target(target, run_dir, target_overrides(target, overrides),
                                   args.keep_checkpoints)
        result = audit_run(run_dir, TARGETS[target][0], recheck)
        result.update(run_dir=str(run_dir), train_seconds=seconds,
                      s_per_step=step_seconds(run_dir))
        results[target] = result
        print_target(target, result)
    totals = verifier_totals(results)
    out = Path(args.json or RESULTS / f"redteam-{stamp}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    settings = {k: v for k, v in vars(args).items() if k != "json"}
    out.write_text(json.dumps({"settings": settings, "overrides": overrides,
                               "verifiers": totals, "targets": results},
                              indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"results: {out}")
    for verifier, total in totals.items():
        print(f"redteam {verifier}: {total['passed']} passed, {total['flagged']} flagged by "
              f"strict re-check ({percent(total['flagged'], total['passed'])})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
