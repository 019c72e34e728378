"""Where memory and time go in a learning run: `rlvr train` in this process, every phase
labelled, with its exact peak RSS (benchmarks/tools/phase_meter.py), its wall and CPU
seconds, malloc's live bytes at its end, and the verifier workers' RSS.

    python -m benchmarks.tools.profile_learning --config benchmarks/redteam/math_arithmetic.yaml \
        --run-dir /tmp/mem/p1 steps=4 data.eval_size=50 optim.lr=1e-5 \
        sampling.prompts_per_step=8 sampling.group_size=8 checkpoint_every=2

Prints a chronological phase table (nested phases indented), the same phases summed
over steps, and each step's time split from metrics.jsonl (time/*) with that step's
evaluation and checkpoint. --json keeps every record; the run's checkpoints are
deleted afterwards unless --keep-checkpoints. The phases are hooks on the
trainer's own functions (`install_hooks`): nothing in rlvr changes to be measured.
Wall seconds on a shared machine mean little; CPU seconds are the steadier number.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sys
import time
from functools import wraps
from pathlib import Path
from typing import Any, Callable

from benchmarks.tools.phase_meter import MB, PhaseMeter, Record


def timed(meter: PhaseMeter, name: str | Callable[..., str], function: Callable) -> Callable:
    """`function` run inside phase `name` (or name(*args), for a per-call label)."""
    @wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with meter.phase(name(*args) if callable(name) else name):
            return function(*args, **kwargs)
    return wrapper


def install_hooks(meter: PhaseMeter, patch: Callable[[Any, str, Any], None] = setattr) -> None:
    """Wrap the trainer's phases. run.py and loop.py call these by their module-level
    names, so replacing the names there is enough; methods are wrapped on their class.
    patch: how to replace an attribute (a test passes monkeypatch.setattr, which undoes)."""
    import torch

    from rlvr.rollout.hf import HFRolloutEngine
    from rlvr.training import evaluate, loop, run
    from rlvr.update_paths.paths import UpdatePath

    for module, name, label in (
            (run, "load_data", "data"), (run, "load_policy", "load_model"),
            (run, "supervised_warmstart", "sft"),
            (run, "build_engine", "engine_setup"), (run, "choose_update_path", "choose_path"),
            (run, "scoring_pool", "verifier_pool"), (evaluate, "evaluate", "eval"),
            (run, "_reference_model", "reference_model"), (run, "allocate_state", "adam_state"),
            (run, "_checkpoint", "checkpoint"), (loop, "grade_episodes", "verify"),
            (loop, "pack", "pack"), (loop, "reference_logprobs", "reference_logprobs"),
            (loop, "policy_update", "update"), (loop, "clip_gradients", "clip"),
            (loop, "token_logprobs_and_entropy", "logprobs")):
        patch(module, name, timed(meter, label, getattr(module, name)))
    patch(run, "rl_step", timed(meter, lambda t, step: f"step {step}", run.rl_step))
    for owner, name, label in ((HFRolloutEngine, "generate_ids", "generate"),
                               (UpdatePath, "logits", "forward"),
                               (torch.Tensor, "backward", "backward"),
                               (torch.optim.AdamW, "step", "adam_step")):
        patch(owner, name, timed(meter, label, getattr(owner, name)))


def generic(label: str) -> str:
    """The label with step numbers dropped: "step 3/update" -> "step/update"."""
    return re.sub(r"step \d+", "step", label)


def _gb(value: int) -> str:
    return f"{value / 2**30:6.2f}"


def phase_table(records: list[Record], depth: int) -> list[str]:
    lines = [f"{'phase':<34} {'wall s':>7} {'cpu s':>7} {'sys s':>6} {'RSS in':>6} {'peak':>6} "
             f"{'+peak':>6} {'out':>6} {'live':>6} {'workers':>7} {'faults':>8}   (memory: GB)"]
    for r in sorted(records, key=lambda r: r.started):
        level = r.label.count("/")
        if level >= depth:
            continue
        name = "  " * level + r.label.rsplit("/", 1)[-1]
        lines.append(f"{name:<34} {r.seconds:7.2f} {r.cpu:7.2f} {r.system:6.2f} {_gb(r.before)} "
                     f"{_gb(r.peak)} "
                     f"{_gb(r.rise)} {_gb(r.after)} {_gb(r.heap_live)} {_gb(r.children):>7} "
                     f"{r.faults:8d}")
    return lines


def summed_table(records: list[Record]) -> list[str]:
    totals: dict[str, list[float]] = {}
    for r in records:
        row = totals.setdefault(generic(r.label), [0, 0.0, 0.0, 0.0, 0, 0, 0])
        row[0] += 1
        row[1] += r.seconds
        row[2] += r.cpu
        row[3] += r.system
        row[4] = max(row[4], r.peak)
        row[5] = max(row[5], r.rise)
        row[6] += r.faults
    lines = [f"{'phase (all calls)':<34} {'calls':>5} {'wall s':>8} {'cpu s':>8} {'sys s':>6} "
             f"{'peak':>6} {'+peak':>6} {'faults':>9}   (memory: GB)"]
    for label, (calls, wall, cpu, system, peak, rise, faults) in totals.items():
        lines.append(f"{label:<34} {calls:5d} {wall:8.2f} {cpu:8.2f} {system:6.2f} {_gb(peak)} "
                     f"{_gb(rise)} {faults:9d}")
    return lines


def step_split(run_dir: Path, records: list[Record]) -> list[str]:
    """time/* of every metrics line, with the eval and checkpoint that followed the step."""
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    after: dict[int, dict[str, float]] = {}
    step = 0
    for r in records:  # records close in order: a step's eval/checkpoint come after it
        if re.fullmatch(r"step \d+", r.label):
            step = int(r.label.split()[1])
        elif r.label in ("eval", "checkpoint") and step:
            after.setdefault(step, {}).setdefault(r.label, 0.0)
            after[step][r.label] += r.seconds
    lines = [f"{'step':>4} {'generate':>9} {'verify':>7} {'update':>7} {'step':>7} "
             f"{'eval':>7} {'ckpt':>7}  path"]
    for m in metrics:
        extra = after.get(m["step"], {})
        lines.append(f"{m['step']:4d} {m['time/generate']:9.2f} {m['time/verify']:7.2f} "
                     f"{m['time/update']:7.2f} {m['time/step']:7.2f} "
                     f"{extra.get('eval', 0.0):7.2f} {extra.get('checkpoint', 0.0):7.2f}  "
                     f"{m.get('update/path', '')}")
    return lines


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                  if line.startswith("model name")), platform.machine())
    return f"{model}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"


def report(meter: PhaseMeter, run_dir: Path, depth: int) -> str:
    top = max(meter.records, key=lambda r: r.peak)
    peak = max(top.peak, meter.outside_peak)
    lines = [f"machine: {machine()}",
             f"peak RSS {_gb(peak).strip()} GB (during {top.label}); verifier workers "
             f"together {_gb(meter.children_peak).strip()} GB at most; "
             f"interpreter at start {meter.start_rss / MB:.0f} MB; outside every phase "
             f"{_gb(meter.outside_peak).strip()} GB at most"
             + ("" if meter.exact else "; peaks sampled (clear_refs refused)"),
             "", *phase_table(meter.records, depth), "", *summed_table(meter.records),
             "", *step_split(run_dir, meter.records)]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("overrides", nargs="*", metavar="key.sub=value")
    parser.add_argument("--config", "-c")
    parser.add_argument("--run-dir", required=True, help="a new (or empty) directory")
    parser.add_argument("--depth", type=int, default=3, help="nesting shown in the table")
    parser.add_argument("--json", help="write every phase record here")
    parser.add_argument("--keep-checkpoints", action="store_true",
                        help="keep the run's checkpoints (deleted by default: 1.6 GB each "
                             "for SmolLM2-135M, weights and AdamW moments)")
    args = parser.parse_args()
    run_dir = Path(args.run_dir)
    if run_dir.exists() and any(run_dir.iterdir()):
        parser.error(f"{run_dir} is not empty: profile into a fresh run directory")
    meter = PhaseMeter().start()
    with meter.phase("import"):
        from rlvr.config import load_config
        from rlvr.training.config import TrainConfig
        from rlvr.training.run import train
    cfg = load_config(TrainConfig, args.config, list(args.overrides))
    install_hooks(meter)
    began = time.perf_counter()
    train(cfg, run_dir)
    meter.stop()
    print(report(meter, run_dir, args.depth))
    print(f"\ntrain() {time.perf_counter() - began:.1f} s; command: {' '.join(sys.argv)}")
    if args.json:
        Path(args.json).write_text(json.dumps([vars(r) for r in meter.records], indent=1))
    if not args.keep_checkpoints:  # repeated profiles filled a disk with them once
        shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
        shutil.rmtree(run_dir / "reference", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
