"""rlvr vs TRL's GRPOTrainer: seconds per RLVR step on the same model and workload.

Both sides: SmolLM2-135M-Instruct (float32, CPU), the same chat prompts (GSM8K
questions), one prompt x G=8 completions of at most 32 new tokens per step, beta = 0,
one policy epoch, temperature 1, the same cheap reward (completion length in
characters, benchmarks/headline/bench_rewards.py). Each side runs in its own
subprocess, so its peak memory (ru_maxrss) is its own. Reported: median seconds per
step (the first, warm-up step excluded), generated tokens/s, peak RSS, and rlvr's floor:
the step's FLOPs (2·N per token forward for generation, 6·N per token forward+backward
for the update, N = the parameters used in matmuls) at this machine's matmul rate,
measured in the same run (the prompt counted once per step: the G samples share it).

    RLVR_SHARED_DATA=/path/to/shared/data python -m benchmarks.headline.bench_vs_trl --steps 4

Last line: `speedup: X.XX (rlvr S s/step, trl T s/step)`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import REPO

REWARD = "benchmarks.headline.bench_rewards:CharLengthReward"  # a plugin of the run
FALLBACK_PROMPTS = ["What is 17 * 23? Explain briefly.", "Name three prime numbers above 50.",
                    "Write one sentence about the sea.", "What is the capital of Peru?"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m-instruct",
                        help="anything rlvr.models.resolve_model takes")
    parser.add_argument("--steps", type=int, default=4, help="steps per side (first = warm-up)")
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--prompts", type=int, default=16, help="distinct prompts drawn from")
    parser.add_argument("--threads", type=int, default=0, help="torch threads on both sides "
                        "(OMP_NUM_THREADS; 0 = torch's default, every core)")
    parser.add_argument("--trl-no-checkpointing", action="store_true",
                        help="run TRL without the activation checkpointing its GRPOConfig turns "
                        "on by default (a faster peer; rlvr never checkpoints here)")
    parser.add_argument("--rlvr-only", action="store_true",
                        help="time rlvr alone (for iterating on it; no speedup line)")
    parser.add_argument("--side", choices=["rlvr"], help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    parser.add_argument("--prompts-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side == "rlvr":
        return rlvr_side(args)
    from rlvr.models import resolve_model

    model_dir = resolve_model(args.model)
    with tempfile.TemporaryDirectory(prefix="rlvr-bench-") as scratch:
        prompts_file = Path(scratch) / "prompts.json"
        prompts_file.write_text(json.dumps(chat_prompts(args.prompts)))
        common = ["--group", str(args.group), "--max-new-tokens", str(args.max_new_tokens),
                  "--steps", str(args.steps)]
        rlvr = run_side([sys.executable, "-m", "benchmarks.headline.bench_vs_trl", "--side",
                         "rlvr", "--model-dir", str(model_dir),
                         "--prompts-file", str(prompts_file), *common],
                        scratch, args.threads)
        if args.rlvr_only:
            print(json.dumps(rlvr))
            return
        trl = run_side([sys.executable, "-m", "benchmarks.headline.bench_vs_trl_trl_side",
                        "--model",
                        str(model_dir), "--prompts", str(prompts_file),
                        "--out", str(Path(scratch) / "trl"), *common,
                        *(["--no-checkpointing"] if args.trl_no_checkpointing else [])],
                       scratch, args.threads)
    if args.threads > 0:
        import torch

        torch.set_num_threads(args.threads)
    rate, bandwidth = matmul_flops_per_s(), memory_bytes_per_s()
    report(args, model_dir, rlvr, trl, rate, bandwidth)


def chat_prompts(count: int) -> list[list[dict[str, str]]]:
    """The first `count` GSM8K test questions as single-turn chats (fallback: a few
    fixed questions when the shared data is absent)."""
    questions = FALLBACK_PROMPTS
    try:
        from rlvr.data.sources import shared_data_dir

        path = shared_data_dir() / "gsm8k" / "test.jsonl"
        questions = [json.loads(line)["question"] for line in path.open()][:count]
    except (FileNotFoundError, OSError):
        pass
    return [[{"role": "user", "content": q}] for q in (questions * count)[:count]]


def run_side(command: list[str], scratch: str, threads: int) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    if threads > 0:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=scratch)
    if done.returncode != 0:
        sys.exit(f"{command[1]} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - began
    return result


def rlvr_side(args: argparse.Namespace) -> None:
    """One rlvr training run through the real trainer (`rlvr.training.run.train`)."""
    from rlvr.config import load_config
    from rlvr.training.config import TrainConfig
    from rlvr.training.run import train

    os.environ["RLVR_BENCH_TOKENIZER"] = args.model_dir
    prompts = json.loads(Path(args.prompts_file).read_text())
    data = Path(args.prompts_file).with_suffix(".jsonl")
    data.write_text("".join(json.dumps({"prompt": p, "reference": char_cap(args.max_new_tokens)})
                            + "\n" for p in prompts))
    cfg = load_config(TrainConfig, overrides=[
        f"model.path={args.model_dir}", "model.threads=0", f"data.path={data}",
        f"reward.plugins=[{REWARD}]", f"data.default_verifier={REWARD}", "data.eval_size=0",
        "prompt.style=chat", "sampling.prompts_per_step=1",
        f"sampling.group_size={args.group}", f"sampling.max_new_tokens={args.max_new_tokens}",
        "sampling.temperature=1.0", "algorithm.kl_beta=0", "algorithm.epochs=1",
        "optim.lr=1e-6", "optim.warmup_steps=0", "sft.steps=0", f"steps={args.steps}",
        "checkpoint_every=0", "keep_checkpoints=1", "reward.workers=1", "log_rollouts=false"])
    run_dir = Path(args.prompts_file).parent / "rlvr-run"
    train(cfg, run_dir)
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    print(json.dumps({
        "side": "rlvr", "step_seconds": [m["time/step"] for m in metrics],
        "generate_seconds": [m["time/generate"] for m in metrics],
        "update_seconds": [m["time/update"] for m in metrics],
        "tokens_per_step": statistics.mean(m["response_length/mean"] * args.group
                                           for m in metrics),
        "prompt_tokens": prompt_token_mean(args.model_dir, prompts),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def char_cap(max_new_tokens: int) -> int:
    """The length reward's cap in characters: above what max_new_tokens tokens spell in
    practice (~4 characters a token), so rewards keep their spread."""
    return 8 * max_new_tokens


def prompt_token_mean(model_dir: str, prompts: list) -> float:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    texts = [tokenizer.apply_chat_template(p, add_generation_prompt=True, tokenize=False)
             for p in prompts]
    lengths = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    return statistics.mean(lengths)


def matmul_flops_per_s(repeats: int = 20) -> float:
    """FLOP/s of a float32 matmul shaped like the update's MLP ([8*~150, 576] x [576, 1536]),
    best of `repeats` (the floor assumes the machine's best rate)."""
    import torch

    a, b = torch.randn(1200, 576), torch.randn(576, 1536)
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - began)
    return 2 * a.shape[0] * a.shape[1] * b.shape[1] / best


def memory_bytes_per_s(repeats: int = 5) -> float:
    """Bytes/s moved by copying a 256 MiB float32 tensor (read + write), best of `repeats`."""
    import torch

    a = torch.ones(64 * 2**20)
    b = torch.empty_like(a)
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        b.copy_(a)
        best = min(best, time.perf_counter() - began)
    return 2 * a.numel() * a.element_size() / best


def matmul_params(model_dir: Path) -> int:
    """Parameters used in matmuls per token: every weight except the embedding lookup,
    plus the output projection (which reuses the embedding when tied)."""
    config = json.loads((model_dir / "config.json").read_text())
    h, i, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    heads, kv = config["num_attention_heads"], config.get("num_key_value_heads",
                                                          config["num_attention_heads"])
    head_dim = h // heads
    attention = h * heads * head_dim * 2 + h * kv * head_dim * 2  # q, o + k, v
    return layers * (attention + 3 * h * i) + h * config["vocab_size"]


def report(args, model_dir: Path, rlvr: dict, trl: dict, rate: float,
           bandwidth: float) -> None:
    def median(side: dict) -> float:
        steps = side["step_seconds"][1:] or side["step_seconds"]  # drop the warm-up step
        return statistics.median(steps)

    n = matmul_params(Path(model_dir))
    prompt, completion = rlvr["prompt_tokens"], rlvr["tokens_per_step"]
    # The least work a step needs: the prompt once and every completion token once,
    # forward at generation (2N per token) and forward + backward in the update (6N).
    # Attention's own FLOPs are left out (small at these lengths), so this is a floor.
    flops = 8 * n * (prompt + completion)
    floor = flops / rate
    # Decoding G rows a token at a time reads every weight once per new token: at small
    # batch that, not arithmetic, bounds generation (float32 weights, 4 bytes each).
    decode_bytes = args.max_new_tokens * 4 * n
    memory_floor = max(2 * n * (prompt + completion) / rate, decode_bytes / bandwidth) \
        + 6 * n * (prompt + completion) / rate
    r, t = median(rlvr), median(trl)
    print(f"model {model_dir} ({n / 1e6:.0f}M matmul params), group {args.group}, "
          f"max {args.max_new_tokens} new tokens, {args.steps} steps per side, "
          f"threads {args.threads or 'default'}, "
          f"load average {os.getloadavg()[0]:.1f}")
    for name, side, median_s in (("rlvr", rlvr, r), ("trl", trl, t)):
        print(f"{name:5s} median {median_s:7.2f} s/step  steps {fmt(side['step_seconds'])}  "
              f"{side['tokens_per_step'] / median_s:6.1f} tokens/s  "
              f"peak RSS {side['peak_rss_mb']:.0f} MB")
    print(f"rlvr  generate {fmt(rlvr['generate_seconds'])}  update {fmt(rlvr['update_seconds'])}")
    print(f"trl   gradient checkpointing {'on' if trl.get('gradient_checkpointing') else 'off'}"
          " (GRPOConfig's default is on)")
    print(f"floor {floor:.2f} s/step ({flops / 1e12:.2f} TFLOP at {rate / 1e9:.1f} GFLOP/s "
          f"matmul); rlvr is {r / floor:.1f}x its floor")
    print(f"floor with decoding memory-bound {memory_floor:.2f} s/step ({decode_bytes / 1e9:.1f} "
          f"GB of weight reads at {bandwidth / 1e9:.1f} GB/s); rlvr is "
          f"{r / memory_floor:.1f}x it")
    print(f"speedup: {t / r:.2f} (rlvr {r:.2f} s/step, trl {t:.2f} s/step)")


def fmt(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:.1f}" for v in values) + "]"


if __name__ == "__main__":
    main()
