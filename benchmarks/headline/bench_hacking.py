"""A reward the model can't fake: the same start trained three ways.

SmolLM2-135M-Instruct on arithmetic ("What is 6 * 75?", configs/learning_arithmetic.yaml),
the same seed, steps and learning rate, three rewards:
  strict   rlvr's `math` verifier (no echoed or unevaluated expressions);
  lenient  math-verify's defaults (`math_verify`), which a real project ships and which
           pays `\\boxed{6 * 75}` for 450;
  rm       a Bradley-Terry reward model (`rlvr rm-train`) trained on pairs of the strict
           run's attempts labelled by the strict verifier (chosen: passed;
           rejected: failed, same prompt; all its steps by default).
Every held-out evaluation of every run is graded by the strict verifier (eval.verifier =
math); the bench re-scores the same answers with the run's own reward, and re-grades
each run's training attempts strictly. Runs go to runs/hacking-TIMESTAMP/ (view them
with `rlvr view runs/hacking-*/strict runs/hacking-*/lenient runs/hacking-*/rm`). A bench
started again with the same --runs-root keeps the runs that finished.

    PYTHONPATH=src python -m benchmarks.headline.bench_hacking
    PYTHONPATH=src python -m benchmarks.headline.bench_hacking --report-only runs/hacking-...

Output: per run its curves and hacked examples (JSON under benchmarks/results/), the
picture docs/images/hacking_curves.png, and last the line
  hacking: strict A0 -> A1; lenient reward R0 -> R1, strict B0 -> B1; rm reward M0 -> M1, strict C0 -> C1
(A, B, C: strict held-out accuracy before/after; R, M: the run's own reward, its mean
score on the same held-out answers).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import REPO, RESULTS
from benchmarks.tools import hacking_report as report

CONFIG = REPO / "configs" / "learning_arithmetic.yaml"
MODEL = "smollm2-135m-instruct"


def add_run_arguments(p: argparse.ArgumentParser, steps: int) -> None:
    """The arguments `train` reads (the strict run's setting); bench_collapse shares them."""
    p.add_argument("--steps", type=int, default=steps, help="RL steps per run")
    p.add_argument("--eval-every", type=int, default=5, help="held-out evaluation every N")
    p.add_argument("--eval-size", type=int, default=100, help="held-out problems")
    p.add_argument("--prompts", type=int, default=4, help="prompts per step")
    p.add_argument("--group", type=int, default=8, help="samples per prompt")
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0 = every core)")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(p, steps=20)
    p.add_argument("--rm-steps", type=int, default=0,
                   help="the strict run's first N steps give the reward model's pairs "
                        "(0 = all)")
    p.add_argument("--rm-pairs-per-prompt", type=int, default=16)
    p.add_argument("--rm-epochs", type=int, default=1)
    p.add_argument("--rm-lr", type=float, default=1e-5)
    p.add_argument("--runs-root", default="", help="default: runs/hacking-TIMESTAMP")
    p.add_argument("--runs", default="strict,lenient,rm",
                   help="which runs (two benches on one --runs-root can split them; rm "
                        "needs strict's attempts)")
    p.add_argument("--report-only", default="", help="re-read a finished bench's runs")
    p.add_argument("--picture", default=str(REPO / "docs" / "images" / "hacking_curves.png"))
    return p.parse_args(argv)


def train(root: Path, name: str, args: argparse.Namespace, *overrides: str) -> Path:
    """`rlvr train` on the shared config, its log in ROOT/NAME.log; the run dir."""
    run = root / name
    if (run / "summary.json").is_file():  # a re-started bench keeps its finished runs
        print(f"{name}: finished before, kept -> {run}", flush=True)
        return run
    command = [sys.executable, "-m", "rlvr", "train", "--config", str(CONFIG), f"name={name}",
               f"steps={args.steps}", "max_seconds=0", f"seed={args.seed}",
               f"eval.every={args.eval_every}", "eval.every_s=0", "eval.n=0",
               "eval.verifier=math", f"data.eval_size={args.eval_size}",
               f"sampling.prompts_per_step={args.prompts}", f"sampling.group_size={args.group}",
               f"optim.lr={args.lr}", f"model.threads={args.threads}", "checkpoint_every=0",
               *overrides, "--run-dir", str(run)]
    began = time.perf_counter()
    with open(root / f"{name}.log", "w", encoding="utf-8") as log:
        subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT,
                       cwd=REPO, env=_env())
    print(f"{name}: trained in {time.perf_counter() - began:.0f} s -> {run}", flush=True)
    return run


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def preference_pairs(strict_run: Path, steps: int, per_prompt: int,
                     seed: int) -> list[dict[str, str]]:
    """Pairs from the strict run's first `steps` steps: in each group, every attempt the
    strict verifier passed (chosen) against every one it failed (rejected), at most
    `per_prompt` pairs a group, drawn at random."""
    groups: dict[tuple[int, str], list[dict]] = {}
    for a in report.lines(strict_run / "rollouts.jsonl"):
        if not steps or a["step"] <= steps:
            groups.setdefault((a["step"], a["prompt"]), []).append(a)
    rng, pairs = random.Random(seed), []
    for (_, prompt), attempts in sorted(groups.items()):
        good = [a["completion"] for a in attempts if a["verdict"]["passed"]]
        bad = [a["completion"] for a in attempts if not a["verdict"]["passed"]]
        both = [(c, r) for c in good for r in bad]
        rng.shuffle(both)
        pairs += [{"prompt": prompt, "chosen": c, "rejected": r}
                  for c, r in both[:per_prompt]]
    return pairs


def train_reward_model(root: Path, strict_run: Path, args: argparse.Namespace) -> Path:
    run = root / "rm-train"
    if (root / "rm-train.json").is_file():
        print(f"rm-train: finished before, kept -> {run}", flush=True)
        return run / "model"
    pairs = preference_pairs(strict_run, args.rm_steps, args.rm_pairs_per_prompt, args.seed)
    data = root / "rm_pairs.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in pairs), encoding="utf-8")
    command = [sys.executable, "-m", "rlvr", "rm-train", f"model.path={MODEL}",
               f"model.threads={args.threads}", f"data.path={data}", "data.eval_fraction=0.15",
               f"train.epochs={args.rm_epochs}", f"train.lr={args.rm_lr}",
               "train.max_length=160", f"seed={args.seed}", "--run-dir", str(run)]
    began = time.perf_counter()
    with open(root / "rm-train.log", "w", encoding="utf-8") as log:
        out = subprocess.run(command, check=True, stdout=subprocess.PIPE, stderr=log,
                             text=True, cwd=REPO, env=_env())
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    (root / "rm-train.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(f"rm-train: {len(pairs)} pairs, held-out pairwise accuracy "
          f"{summary['accuracy_before']:.3f} -> {summary['accuracy_after']:.3f}, "
          f"{time.perf_counter() - began:.0f} s", flush=True)
    return run / "model"


def run_all(args: argparse.Namespace) -> Path:
    root = Path(args.runs_root or REPO / "runs" / f"hacking-{time.strftime('%Y%m%d-%H%M%S')}")
    root.mkdir(parents=True, exist_ok=True)
    (root / "bench_args.json").write_text(json.dumps(vars(args), indent=1), encoding="utf-8")
    runs = set(args.runs.split(","))
    if "strict" in runs or "rm" in runs:
        strict = train(root, "strict", args, "reward.verifier=math")
    if "rm" in runs:
        model = train_reward_model(root, strict, args)
        train(root, "rm", args, "reward.verifier=reward_model",
              f"reward.options={{model: {model}}}")
    if "lenient" in runs:
        train(root, "lenient", args, "reward.verifier=math_verify")
    return root


REWARDS = {"strict": "math (strict)", "lenient": "math-verify defaults", "rm": "reward model"}


def summarise(root: Path, picture: Path) -> dict:
    """Curves, examples and the picture of the runs under `root` that finished."""
    scorers = {"strict": lambda: None, "lenient": report.math_verify_scorer,
               "rm": lambda: report.reward_model_scorer(str(root / "rm-train" / "model"))}
    curves = {}
    for name, make_scorer in scorers.items():
        run = root / name
        if not (run / "summary.json").is_file():
            print(f"{name}: no finished run in {run}, left out", flush=True)
            continue
        scorer = make_scorer()
        curves[name] = {"reward": REWARDS[name], "held_out": report.held_out_curve(run, scorer),
                        "training": report.training_curve(run),
                        "hacked": report.hacked_examples(run, scorer) if scorer else []}
    report.draw(curves, picture)
    rm_summary = root / "rm-train.json"
    result = {"root": str(root), "curves": curves, "picture": str(picture),
              "rm_train": json.loads(rm_summary.read_text()) if rm_summary.is_file() else None}
    out = RESULTS / f"hacking-{time.strftime('%Y%m%d-%H%M')}.json"
    out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(f"results: {out}\npicture: {picture}")
    return result


def print_report(result: dict) -> None:
    c = result["curves"]
    missing = [name for name in REWARDS if name not in c]
    for name, curve in c.items():
        print(f"\n{name} ({curve['reward']}): held-out step, own reward, strict accuracy")
        for row in curve["held_out"]:
            print(f"  {row['step']:4d}  {row['own']:.3f}  {row['strict']:.3f}")
        for ex in curve["hacked"]:
            print(f"  paid {ex['own_reward']:.2f}, strict {ex['strict_reason']}: "
                  f"{ex['prompt']!r} -> {ex['completion'][:100]!r}")

    if missing:
        print(f"\nhacking: incomplete, no finished {', '.join(missing)} run(s) in {result['root']}")
        return

    def ends(name: str, key: str) -> tuple[float, float]:
        rows = c[name]["held_out"]
        return rows[0][key], rows[-1][key]

    a0, a1 = ends("strict", "strict")
    r0, r1 = ends("lenient", "own")
    b0, b1 = ends("lenient", "strict")
    m0, m1 = ends("rm", "own")
    c0, c1 = ends("rm", "strict")
    print(f"\nhacking: strict {a0:.3f} -> {a1:.3f}; lenient reward {r0:.3f} -> {r1:.3f}, "
          f"strict {b0:.3f} -> {b1:.3f}; rm reward {m0:.3f} -> {m1:.3f}, "
          f"strict {c0:.3f} -> {c1:.3f}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    began = time.perf_counter()
    root = Path(args.report_only) if args.report_only else run_all(args)
    result = summarise(root, Path(args.picture))
    print(f"bench wall time {time.perf_counter() - began:.0f} s")
    print_report(result)


if __name__ == "__main__":
    main()
