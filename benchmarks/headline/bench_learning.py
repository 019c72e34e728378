"""Learning on a time budget: rlvr vs TRL's GRPOTrainer, same model, task and clock.

SmolLM2-135M-Instruct learns arithmetic ("What is 47 * 8?", rlvr's procedural task with
a hash-disjoint train/test split) graded by the `math` verifier, on the CPU, for
`max_seconds` of training each side. rlvr runs as a user runs it (`rlvr train --config
CONFIG --run-dir DIR`); TRL's GRPOTrainer runs the same config's settings in
bench_learning_trl_side.py. Each side in its own process (peak RSS is its own); both
are evaluated by rlvr's `held_out_eval` (same held-out problems, decoding and
verifier) at step 0, whenever the training clock (evaluation pauses excluded) passes
a multiple of `eval.every_s`, and at the end.

    python -m benchmarks.headline.bench_learning               # both sides, the default config
    python -m benchmarks.headline.bench_learning --rlvr-only --budget-s 120 --every-s 60
    python -m benchmarks.headline.bench_learning optim.lr=2e-5        # overrides go to both sides
    python -m benchmarks.headline.bench_learning --minutes 60 --rlvr-only   # a long run

Writes DIR/learning_curve.png (TRL overlaid when it ran; TRL's files are in DIR/trl)
and benchmarks/results/learning-YYYYMMDD-HHMM.json. Last line (rlvr only):
`learning: TASK held-out A -> B in S s (N steps)`; with TRL:
`vs trl: rlvr A -> B, trl A -> C at S s; rlvr reached C at T s`.

--minutes M is a long run: M minutes of training clock, the best held-out checkpoint kept
(eval.keep_best) and re-evaluated afterwards by `rlvr eval RUN --best` on the same
held-out problems, an evaluation every 300 training seconds unless --every-s says
otherwise, and the step cap lifted so the clock ends the run. It ends with
`long run: TASK held-out best B at step N, final F, collapse warnings W`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from benchmarks import REPO, RESULTS

DEFAULT_CONFIG = REPO / "configs" / "learning_arithmetic.yaml"
TEN_MINUTES = 600.0
# module -> the rlvr extra that installs it (checked before anything starts)
NEEDED = {"matplotlib": "plot", "trl": "bench", "datasets": "bench"}

Evals = Sequence[dict[str, Any]]


# --- pure parts (tests/test_bench_learning.py) ---------------------------------------

def accuracy(row: dict[str, Any]) -> float:
    return float(row["greedy/accuracy"])


def at_mark(evals: Evals, seconds: float) -> dict[str, Any] | None:
    """The evaluation standing for `seconds` of training: the first taken at or after it
    (the one its mark triggered), else the last (the run ended before `seconds`)."""
    later = [e for e in evals if e["train_seconds"] >= seconds]
    return later[0] if later else (evals[-1] if evals else None)


def first_reaching(evals: Evals, target: float) -> float | None:
    """train_seconds of the first evaluation with greedy accuracy >= target (None: none)."""
    return next((e["train_seconds"] for e in evals if accuracy(e) >= target), None)


def marks_end(evals: Evals, budget_s: float) -> float:
    """Where a side's marks end: the budget, or its last evaluation when it stopped
    earlier (its steps ran out)."""
    last = evals[-1]["train_seconds"]
    return min(budget_s, last) if budget_s > 0 else last


def learning_line(task: str, evals: Evals) -> str:
    first, last = evals[0], evals[-1]
    return (f"learning: {task} held-out {accuracy(first):.3f} -> {accuracy(last):.3f} in "
            f"{round(last['train_seconds'])} s ({last['step']} steps)")


def versus_line(rlvr: Evals, trl: Evals, budget_s: float) -> str:
    """The comparison line. Each side's own step-0 accuracy is printed (the same model
    under the same evaluation, so they agree unless something is wrong)."""
    target = accuracy(trl[-1])
    reached = first_reaching(rlvr, target)
    end = round(marks_end(trl, budget_s))
    head = (f"vs trl: rlvr {accuracy(rlvr[0]):.3f} -> {accuracy(rlvr[-1]):.3f}, trl "
            f"{accuracy(trl[0]):.3f} -> {target:.3f} at {end} s; ")
    if reached is None:
        return head + f"rlvr did not reach {target:.3f} in {round(rlvr[-1]['train_seconds'])} s"
    return head + f"rlvr reached {target:.3f} at {round(reached)} s"


def long_run_line(task: str, evals: Evals, summary: dict[str, Any]) -> str:
    """The long run's verdict: the best held-out evaluation the run kept (summary.json
    `best`), the final one, and how many collapse warnings the run's watch raised."""
    best = summary.get("best") or {}
    if not best:
        raise ValueError("the run kept no best checkpoint (eval.keep_best was off)")
    return (f"long run: {task} held-out best {best['accuracy']:.3f} at step {best['step']}, "
            f"final {accuracy(evals[-1]):.3f}, collapse warnings "
            f"{len(summary.get('collapse_warnings') or [])}")


def long_run_overrides(minutes: float, every_s: float | None) -> list[str]:
    """What --minutes adds: the clock's budget, the best checkpoint kept, evaluations
    every 300 s (unless --every-s), and a step cap the clock reaches first."""
    return [f"max_seconds={minutes * 60:g}", "eval.keep_best=true", "steps=1000000",
            *([] if every_s is not None else ["eval.every_s=300"])]


def mark_table(sides: dict[str, Evals], every_s: float, budget_s: float) -> list[str]:
    """Held-out greedy accuracy of each side at step 0, at each mark until the budget or
    the last evaluation, whichever is first, and at the end: 'accuracy (step, train
    seconds)'. Marks in a row that pick the same evaluations (a long step passed them
    all, or one side evaluated less often) share one line, labelled by the last."""
    last = max(e[-1]["train_seconds"] for e in sides.values())
    horizon = min(budget_s, last) if budget_s > 0 else last
    marks = [every_s * k for k in range(1, int(horizon // every_s) + 1)] if every_s > 0 else []
    rows = [("before", [e[0] for e in sides.values()])]
    for mark in marks:
        picked = [at_mark(e, mark) for e in sides.values()]
        if len(rows) > 1 and picked == rows[-1][1]:
            rows.pop()
        rows.append((f"{mark:.0f} s", picked))
    end = [e[-1] for e in sides.values()]
    if len(rows) > 1 and rows[-1][1] == end:  # the last mark picked the final evaluations
        rows.pop()
    rows.append(("end", end))
    lines = ["mark      " + "".join(f"{name:>24}" for name in sides)]
    for label, picked in rows:
        cells = [f"{accuracy(r):.3f} ({r['step']:>4}, {r['train_seconds']:6.0f} s)"
                 for r in picked]
        lines.append(f"{label:<10}" + "".join(f"{c:>24}" for c in cells))
    return lines


# --- the run ---------------------------------------------------------------------------

def main() -> None:
    args = parse_args()
    missing = sorted({NEEDED[m] for m in NEEDED if importlib.util.find_spec(m) is None
                      and (m == "matplotlib" or not args.rlvr_only)})
    if missing:
        sys.exit(f"bench_learning: missing packages: pip install 'rlvr[{','.join(missing)}]' "
                 f"(in a checkout: pip install -e '.[{','.join(missing)}]')")
    overrides = side_overrides(args)
    cfg = load_or_exit(args.config, overrides, not args.rlvr_only)
    from rlvr.runs import default_run_dir

    run_dir = default_run_dir(cfg.name, args.run_root).resolve()
    rlvr = rlvr_side(args.config, run_dir, overrides)
    trl = None if args.rlvr_only else trl_side(args.config, run_dir / "trl", overrides)
    report(cfg, run_dir, rlvr, trl, args)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("overrides", nargs="*", metavar="key.sub=value",
                   help="config overrides for both sides")
    p.add_argument("--config", default=str(DEFAULT_CONFIG), help="rlvr training config")
    p.add_argument("--rlvr-only", action="store_true", help="no TRL side")
    p.add_argument("--budget-s", type=float, help="training seconds per side (max_seconds)")
    p.add_argument("--every-s", type=float, help="evaluate every S training seconds")
    p.add_argument("--eval-size", type=int, help="held-out problems (data.eval_size)")
    p.add_argument("--run-root", default="runs", help="the run dir goes under it")
    p.add_argument("--minutes", type=float, help="a long run of M training minutes (rlvr "
                   "only): keeps and re-evaluates the best checkpoint")
    args = p.parse_args()
    if args.minutes is not None and not args.rlvr_only:
        p.error("--minutes is a long run of rlvr alone: add --rlvr-only")
    return args


def side_overrides(args: argparse.Namespace) -> list[str]:
    """The overrides both sides get: the user's, then the flags' (which win)."""
    flags = {"max_seconds": args.budget_s, "eval.every_s": args.every_s,
             "data.eval_size": args.eval_size}
    long_run = (long_run_overrides(args.minutes, args.every_s)
                if getattr(args, "minutes", None) else [])
    return list(args.overrides) + long_run + [f"{k}={v}" for k, v in flags.items()
                                               if v is not None]


def load_or_exit(path: str, overrides: list[str], with_trl: bool) -> Any:
    """The resolved config; a config that fails to load (or that TRL cannot run) stops
    the bench before anything starts."""
    from rlvr.config import ConfigError, load_config
    from rlvr.training.config import TrainConfig

    try:
        cfg = load_config(TrainConfig, path, overrides)
        if with_trl:
            from benchmarks.headline.bench_learning_trl_side import grpo_settings

            grpo_settings(cfg, "")
    except (ConfigError, ValueError, OSError) as exc:
        sys.exit(f"bench_learning: config {path}: {exc}")
    return cfg


@dataclass
class Finished:
    stdout: str
    peak_rss_mb: float
    wall_seconds: float


def run_process(command: list[str], capture: bool) -> Finished:
    """Run a side to completion; its peak RSS is the largest process of its tree
    (wait4's rusage of that child). stderr passes through (progress)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO / "src"), str(REPO), os.environ.get("PYTHONPATH", "")])}
    began = time.perf_counter()
    process = subprocess.Popen(command, env=env, text=True,
                               stdout=subprocess.PIPE if capture else None)
    stdout = ""
    if capture:
        stdout = process.stdout.read()
        process.stdout.close()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    if process.returncode != 0:
        sys.exit(f"{' '.join(command[:4])} ... failed ({process.returncode})\n{stdout[-4000:]}")
    return Finished(stdout, usage.ru_maxrss / 1024, time.perf_counter() - began)


def read_lines(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text().splitlines() if path.is_file() else []
    if not lines:
        sys.exit(f"bench_learning: {path} is missing or empty: the side wrote no evaluations")
    return [json.loads(line) for line in lines if line.strip()]


def rlvr_side(config: str, run_dir: Path, overrides: list[str]) -> dict[str, Any]:
    done = run_process([sys.executable, "-m", "rlvr", "train", "--config", config,
                        "--run-dir", str(run_dir), *overrides], capture=False)
    summary = json.loads((run_dir / "summary.json").read_text())
    return {"evals": read_lines(run_dir / "evals.jsonl"), "summary": summary,
            "peak_rss_mb": done.peak_rss_mb, "wall_seconds": done.wall_seconds,
            "honesty": honesty(run_dir)}


def honesty(run_dir: Path) -> list[str]:
    """Is the lift made of real answers? `rlvr audit` over the training attempts (as a
    user runs it), and the strict re-check over the last held-out evaluation's passed
    answers (evals/step-N.jsonl)."""
    from rlvr.audit.strict import strict_recheck
    from rlvr.runs.verifier import run_verifier

    audit = subprocess.run([sys.executable, "-m", "rlvr", "audit", str(run_dir)],
                           capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    said = [line for line in audit.stdout.splitlines() if line.strip()]
    verifier = run_verifier(run_dir)
    last = sorted((run_dir / "evals").glob("step-*.jsonl"))[-1]
    answers = [json.loads(line) for line in last.read_text().splitlines() if line.strip()]
    passed = [a for a in answers if a["passed"]]
    flagged = [a for a in passed
               if strict_recheck(verifier, a["completion"], a["reference"], a["prompt"])]
    # its header's counts, how many attempts it flagged, and its verdict ("nothing raised")
    parts = ([said[0].split(": ", 1)[-1]] if said else []) + [
        line.split(" written")[0] for line in said if "flagged attempt" in line] + said[-1:]
    return [f"audit: rlvr audit {run_dir.name} exited {audit.returncode}: " + "; ".join(parts),
            f"held-out answers ({last.stem}): {len(passed)} of {len(answers)} passed, "
            f"{len(flagged)} of them flagged by the strict re-check"]


def trl_side(config: str, out: Path, overrides: list[str]) -> dict[str, Any]:
    done = run_process([sys.executable, "-m", "benchmarks.headline.bench_learning_trl_side",
                        "--config", config, "--out", str(out), *overrides], capture=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {**result, "evals": read_lines(out / "evals.jsonl"),
            "peak_rss_mb": done.peak_rss_mb, "wall_seconds": done.wall_seconds}


def report(cfg: Any, run_dir: Path, rlvr: dict, trl: dict | None,
           args: argparse.Namespace) -> None:
    from rlvr.runs.curves import draw_curves, load_series

    sides = {"rlvr": rlvr["evals"], **({"trl": trl["evals"]} if trl else {})}
    runs = {"rlvr": load_series(run_dir), **({"trl": load_series(run_dir / "trl")} if trl else {})}
    curve = draw_curves(run_dir / "learning_curve.png", runs, title=f"{cfg.name} on "
                        f"{len(os.sched_getaffinity(0))} CPU cores")
    results = write_results(cfg, run_dir, rlvr, trl, args)
    print("\n".join(mark_table(sides, cfg.eval.every_s, cfg.max_seconds)))
    ten = {name: at_mark(evals, TEN_MINUTES) for name, evals in sides.items()}
    print("at 10 min: " + ", ".join(
        f"{name} {accuracy(row):.3f}" + (f" (ended at {row['train_seconds']:.0f} s)"
                                         if row["train_seconds"] < TEN_MINUTES else "")
        for name, row in ten.items()))
    print(time_split(run_dir, rlvr["evals"], trl))
    for name, side in (("rlvr", rlvr), ("trl", trl)):
        if side:
            print(f"{name}: peak RSS {side['peak_rss_mb']:.0f} MB, {side['wall_seconds']:.0f} s "
                  "wall (set-up and evaluations included)")
    for line in rlvr["honesty"]:
        print(line)
    print(f"curve: {curve}\nresults: {results}")
    print(f"wall: {rlvr['wall_seconds']:.0f} s (rlvr train, whole process)")
    print(learning_line(cfg.name, rlvr["evals"]))
    if trl:
        if f"{accuracy(trl['evals'][0]):.3f}" != f"{accuracy(rlvr['evals'][0]):.3f}":
            print(f"note: trl's step-0 accuracy is {accuracy(trl['evals'][0]):.3f}; the "
                  "sides evaluate the same model with the same code, so they should agree")
        print(versus_line(rlvr["evals"], trl["evals"], cfg.max_seconds))
    if args.minutes:
        print(reevaluate_best(run_dir, cfg))
        print(long_run_line(cfg.name, rlvr["evals"], rlvr["summary"]))


def reevaluate_best(run_dir: Path, cfg: Any) -> str:
    """`rlvr eval RUN --best` (as a user runs it) on the held-out problems the run
    evaluated, greedy, with the run's prompt rendering and token budget: the kept
    weights should give the best evaluation's accuracy again."""
    answers = sorted((run_dir / "evals").glob("step-*.jsonl"))[-1]
    tasks = run_dir / "held_out_tasks.jsonl"
    rows = [json.loads(line) for line in answers.read_text().splitlines() if line.strip()]
    tasks.write_text("".join(json.dumps({"id": r["id"], "prompt": r["prompt"],
                                         "reference": r["reference"], "verifier": "math"}) + "\n"
                             for r in rows))
    out = run_dir / "eval" / "best-held-out.json"
    run_process([sys.executable, "-m", "rlvr", "eval", str(run_dir), "--best", "--dataset",
                 str(tasks), "--max-new-tokens", str(cfg.sampling.max_new_tokens),
                 "--output", str(out)], capture=True)
    result = json.loads(out.read_text())
    return (f"best checkpoint re-evaluated (rlvr eval {run_dir.name} --best, {len(rows)} "
            f"held-out problems): greedy accuracy {result_accuracy(result):.3f}")


def result_accuracy(result: dict[str, Any]) -> float:
    """Greedy accuracy from `rlvr eval`'s results JSON."""
    return float(result["metrics"]["greedy/accuracy"])


def time_split(run_dir: Path, rlvr_evals: Evals, trl: dict | None) -> str:
    """Where each side's training seconds went: rlvr's per-step split from metrics.jsonl,
    TRL's mean step; and the seconds both spent in held-out evaluations (paused out)."""
    metrics = read_lines(run_dir / "metrics.jsonl")
    steps = len(metrics)

    def mean(key: str) -> float:
        return sum(m.get(key, 0.0) for m in metrics) / max(1, steps)

    text = (f"rlvr: {mean('time/step'):.1f} s/step over {steps} steps (generate "
            f"{mean('time/generate'):.1f}, verify {mean('time/verify'):.2f}, update "
            f"{mean('time/update'):.1f}), {mean('tokens_per_s'):.0f} generated tokens/s; "
            f"evaluations {sum(e.get('eval_seconds', 0.0) for e in rlvr_evals):.0f} s")
    if trl:
        seconds = trl.get("step_seconds") or [float("nan")]
        text += (f"\ntrl: {sum(seconds) / len(seconds):.1f} s/step over {len(seconds)} steps; "
                 f"evaluations {sum(e.get('eval_seconds', 0.0) for e in trl['evals']):.0f} s")
    return text


def write_results(cfg: Any, run_dir: Path, rlvr: dict, trl: dict | None,
                  args: argparse.Namespace) -> Path:
    import yaml

    out = RESULTS / f"learning-{time.strftime('%Y%m%d-%H%M')}.json"
    out.parent.mkdir(exist_ok=True)
    payload = {"command": sys.argv, "config_file": args.config, "run_dir": str(run_dir),
               "config": yaml.safe_load((run_dir / "config.yaml").read_text()),
               "machine": {"cpus": len(os.sched_getaffinity(0)),
                           "load_average": os.getloadavg()},
               "rlvr": rlvr, "trl": trl}
    out.write_text(json.dumps(payload, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
