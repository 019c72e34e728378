"""The embedded tools demo, end to end: `rlvr train --config configs/tools_products.yaml`.

SmolLM2-135M-Instruct answers two-digit products ("What is 47 * 38?", the generated
datasets products-train / products-test) in the `python_tool` environment: it may call
a sandboxed Python tool, read what it printed, then answer. The benchmark runs, in
subprocesses as a user would, each in a fresh run directory:

  1. base:    the tool recipe with no training at all (sft.steps=0, one RL step): its
              "before" evaluation is the untrained model's, in the tool environment;
  2. tools:   the recipe as committed: a programmatic SFT cold start (the tool call on
              turn 1, the printed number boxed on turn 2; no answer is ever in the
              first turn's target), then RL for max_seconds;
  3. no tools: the same task, data, seed, cold-start steps and max_seconds, one turn,
              no environment: the cold start teaches the boxed product itself, then RL.

and prints, last:

    tools: TASK held-out A -> B, tool calls per episode T0 -> T1, in S s; without tools A2 -> C

A:      held-out accuracy of the untrained model in the tool environment (run 1's
        "before"): one greedy episode per held-out record, graded by the `math`
        verifier on the model's last turn (rlvr.training.episode_eval).
B:      the same after the cold start and RL (run 2's "after").
T0, T1: mean tool calls per held-out episode (greedy/tool_calls), untrained (run 1)
        and after training (run 2).
S:      run 2's training seconds: its cold start plus its RL clock (held-out
        evaluations paused out; max_seconds caps the RL part).
A2, C:  run 3's held-out accuracy (one greedy answer per record, the same verifier)
        before RL (A2: its own "before", which is after its cold start) and after its
        cold start and RL (C). The untrained model's one-turn accuracy is not measured
        here (A is the untrained model's in the tool environment).
Run 2's accuracy after the cold start, before RL, is in the results JSON
("after_cold_start"; run 3's is A2, also "no_tools_after_cold_start").

    PYTHONPATH=src python -m benchmarks.headline.bench_tools [--seed 0] [key=value ...]

The overrides go to runs 2 and 3 (run 1 takes them too, less what makes it untrained).
Each bench's numbers also go to benchmarks/results/tools-<time>-seed<S>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from benchmarks import REPO, RESULTS
from benchmarks.headline.bench_multiturn import run_demo

CONFIG = REPO / "configs" / "tools_products.yaml"
# The untrained model in the tool environment: no cold start, the fewest RL steps a run
# takes; only its "before" evaluation is read.
BASE = ["sft.steps=0", "steps=1", "max_seconds=0"]
# The same run without tools: one turn, no environment; the cold start teaches the
# answer's format on the record's own prompt (the boxed product), the instruction says
# how to answer, as the tool environment's note does.
NO_TOOLS = ["episodes.environment=single_turn", "episodes.max_turns=1", "episodes.options={}",
            "sft.prompt=task", "sft.followup_template=",
            "sft.target_template=\\boxed{{{reference}}}",
            "prompt.instruction=Give the final answer as \\boxed{ANSWER}."]


def run_train(run_dir: Path, seed: int, overrides: list[str]) -> float:
    """`rlvr train` on this recipe, as a user runs it; its wall seconds."""
    return run_demo(run_dir, seed, overrides, config=CONFIG)


def read_summary(run_dir: Path) -> dict:
    """The numbers one run reports: held-out rows before and after, and its seconds."""
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    before, after = summary["eval"]["before"]["row"], summary["eval"]["after"]["row"]
    sft = summary.get("sft") or {}
    return {"before": before["greedy/accuracy"], "after": after["greedy/accuracy"],
            "tool_calls_before": before.get("greedy/tool_calls"),
            "tool_calls_after": after.get("greedy/tool_calls"),
            "held_out": int(after["count"]), "rl_seconds": summary["train_seconds"],
            "sft_seconds": float(sft.get("seconds", 0.0)), "steps": summary["steps"],
            "wall_seconds": summary["wall_seconds"]}


def combine(base: dict, tools: dict, no_tools: dict) -> dict:
    """The headline's numbers (the module docstring) from the three runs' summaries."""
    if tools["tool_calls_after"] is None or base["tool_calls_before"] is None:
        raise SystemExit("the tool runs' held-out evaluations ran no episodes "
                         "(episodes.max_turns must be > 1)")
    return {"A": base["before"], "B": tools["after"], "T0": base["tool_calls_before"],
            "T1": tools["tool_calls_after"], "S": tools["sft_seconds"] + tools["rl_seconds"],
            "A2": no_tools["before"], "C": no_tools["after"],
            "after_cold_start": tools["before"], "no_tools_after_cold_start": no_tools["before"],
            "no_tools_seconds": no_tools["sft_seconds"] + no_tools["rl_seconds"],
            "steps": tools["steps"], "no_tools_steps": no_tools["steps"],
            "held_out": tools["held_out"]}


def headline(task: str, r: dict) -> str:
    return (f"tools: {task} held-out {r['A']:.3f} -> {r['B']:.3f}, tool calls per episode "
            f"{r['T0']:.2f} -> {r['T1']:.2f}, in {r['S']:.0f} s; without tools "
            f"{r['A2']:.3f} -> {r['C']:.3f}")


def task_name(run_dir: Path) -> str:
    """TASK in the headline: the training data's alias less its "-train"."""
    import yaml

    config = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))
    return str(config["data"]["path"]).removesuffix("-train")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="the runs' seed (default 0)")
    parser.add_argument("--run-root", default=None, help="where the run dirs go "
                        "(default: a temporary directory)")
    parser.add_argument("overrides", nargs="*", help="config overrides (default: none)")
    args = parser.parse_args()
    root = Path(args.run_root or tempfile.mkdtemp(prefix="rlvr-tools-"))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    load = os.getloadavg()[0]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average "
          f"{load:.1f} at start; run dirs under {root}", flush=True)
    runs = {"base": [*args.overrides, *BASE], "tools": args.overrides,
            "no_tools": [*args.overrides, *NO_TOOLS]}
    summaries, walls = {}, {}
    for name, overrides in runs.items():
        run_dir = root / f"{name}-seed{args.seed}-{stamp}"
        walls[name] = round(run_train(run_dir, args.seed, overrides), 1)
        summaries[name] = read_summary(run_dir)
    result = {**combine(summaries["base"], summaries["tools"], summaries["no_tools"]),
              "runs": summaries, "process_seconds": walls, "seed": args.seed,
              "overrides": args.overrides, "load_average_start": round(load, 1),
              "load_average_end": round(os.getloadavg()[0], 1)}
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"tools-{time.strftime('%Y%m%d-%H%M')}-seed{args.seed}.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result), flush=True)
    print(headline(task_name(root / f"tools-seed{args.seed}-{stamp}"), result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
