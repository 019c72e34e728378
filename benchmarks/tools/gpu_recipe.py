"""The GPU recipe, ready to run: GSM8K with the math verifier on one GPU, held-out GSM8K
accuracy before and after.

    RLVR_SHARED_DATA=/path/to/shared/data python -m benchmarks.tools.gpu_recipe --steps 60

It runs `rlvr train --config configs/gsm8k.yaml` as a user would, with the one-GPU
settings of docs/recipes.md (bfloat16, 64 prompts x 8 samples, 512 new tokens, one
verifier worker per core), held-out evaluations every `--every-s` training seconds, and
the vLLM engine when `sampling.engine=vllm` is registered and vllm imports (else rlvr's
built-in engine). Last line:

    gpu: gsm8k held-out A -> B in S s (N steps, engine E, DEVICE)

Without a CUDA device it says so and exits 3: no GPU figure is ever made up.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import REPO

NO_GPU_EXIT = 3


def gpu_name() -> str | None:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def pick_engine() -> str:
    """vllm when rlvr registers an engine of that name and the package imports, else hf."""
    from rlvr.rollout.factory import engine_names

    if "vllm" in engine_names() and importlib.util.find_spec("vllm") is not None:
        return "vllm"
    return "hf"


def recipe_overrides(args: argparse.Namespace, engine: str) -> list[str]:
    return [f"steps={args.steps}", "model.device=cuda", "model.dtype=bfloat16",
            f"sampling.engine={engine}", f"sampling.prompts_per_step={args.prompts}",
            "sampling.group_size=8", f"sampling.max_new_tokens={args.max_new_tokens}",
            "reward.workers=0", f"optim.lr={args.lr}", f"data.eval_size={args.eval_size}",
            f"eval.every_s={args.every_s}", "checkpoint_every=0", *args.overrides]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(REPO / "configs" / "gsm8k.yaml"))
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--prompts", type=int, default=64, help="prompts per step")
    parser.add_argument("--max-new-tokens", type=int, default=512)
    parser.add_argument("--lr", type=float, default=1e-6)
    parser.add_argument("--eval-size", type=int, default=500, help="GSM8K test problems")
    parser.add_argument("--every-s", type=float, default=120.0)
    parser.add_argument("--run-dir", default="")
    parser.add_argument("overrides", nargs="*", help="more key=value overrides")
    args = parser.parse_args()
    device = gpu_name()
    if device is None:
        print("gpu recipe: no CUDA device on this machine; nothing measured", file=sys.stderr)
        return NO_GPU_EXIT
    engine = pick_engine()
    run_dir = Path(args.run_dir or f"runs/gpu-gsm8k-{time.strftime('%Y%m%d-%H%M%S')}")
    command = [sys.executable, "-m", "rlvr", "train", "--config", args.config,
               "--run-dir", str(run_dir), *recipe_overrides(args, engine)]
    print("$", " ".join(command), flush=True)
    started = time.perf_counter()
    subprocess.run(command, check=True)
    wall = time.perf_counter() - started
    summary = json.loads((run_dir / "summary.json").read_text())
    before, after = summary["eval"]["before"], summary["eval"]["after"]
    print(f"wall: {wall:.0f} s (model load, evaluations and training)")
    print(f"gpu: gsm8k held-out {before['accuracy']:.3f} -> {after['accuracy']:.3f} in "
          f"{summary['train_seconds']:.0f} s ({summary['steps']} steps, engine {engine}, "
          f"{device})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
