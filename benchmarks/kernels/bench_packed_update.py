"""One GRPO group's update forward + backward: packed row with the tree attention vs
packed row with the 4D tree mask vs two-pass (prompt + repeated KV cache) vs the plain
full batch.

Workload (bench_vs_trl's): SmolLM2-135M-Instruct, fp32 CPU, 1 prompt of 95 tokens x 8
completions of 32 tokens. Each timed step: completion logits (one path of
rlvr.accel.update.shared_prefix, or the plain forward), rlvr.algorithms.token_logprobs,
backward of the masked sum. Paths run interleaved, median of --repeats after one warm
-up each; ratios against packed (4D mask) and tree survive a noisy shared machine. Also
prints the path the automatic choice takes and the largest log-prob difference vs plain.

    PYTHONPATH=src python -m benchmarks.kernels.bench_packed_update [--group 8 --tokens 32]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from rlvr.algorithms import token_logprobs
from rlvr.rollout.base import Completion
from rlvr.training.batch import pack
from rlvr.accel.update.shared_prefix import (ModelShape, choose_path, group_rows,
                                             shared_prompt_logits)

MODEL_DIR = Path("/tmp/rlvrcache/models/smollm2-135m-instruct-a57964ac1204")
PATHS = ("tree", "packed", "two_pass", "plain")


def make_batch(args, vocab: int):
    generator = torch.Generator().manual_seed(0)
    prompt = torch.randint(0, vocab, (args.prompt,), generator=generator).tolist()
    rows = [Completion(prompt_ids=prompt, token_ids=ids, logprobs=[0.0] * args.tokens, text="",
                       finish_reason="length")
            for ids in torch.randint(0, vocab, (args.group, args.tokens),
                                     generator=generator).tolist()]
    return pack(rows, 0, torch.device("cpu"))


def logits_for(path: str, model, batch) -> torch.Tensor:
    if path == "plain":
        return model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                     position_ids=batch.position_ids,
                     logits_to_keep=batch.width + 1).logits[:, :-1]  # [B, T, V]
    return shared_prompt_logits(model, batch.input_ids, batch.attention_mask,
                                batch.completion_ids, batch.mask, path=path).dense()  # [B, T, V]


def step(path: str, model, batch, grad: bool = True) -> tuple[float, torch.Tensor]:
    model.zero_grad(set_to_none=True)
    began = time.perf_counter()
    with torch.set_grad_enabled(grad):
        logprobs = token_logprobs(logits_for(path, model, batch), batch.completion_ids)  # [B, T]
        if grad:
            (logprobs * batch.mask).sum().backward()
    return time.perf_counter() - began, logprobs.detach()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=MODEL_DIR)
    parser.add_argument("--prompt", type=int, default=95)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--checkpointing", action="store_true",
                        help="activation checkpointing on (two-pass cannot run then)")
    parser.add_argument("--no-grad", action="store_true",
                        help="forward only, as for old/reference log-probs")
    args = parser.parse_args()
    if not (args.model / "config.json").exists():
        print(f"skipped: no model at {args.model} (a Hugging Face model directory)")
        return
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    model.train()
    paths = PATHS
    if args.checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        paths = ("tree", "packed", "plain")
    batch = make_batch(args, model.config.vocab_size)
    groups = group_rows(batch.input_ids, batch.attention_mask, batch.mask)
    grad = not args.no_grad
    chosen = choose_path(ModelShape.of(model), groups, args.prompt, args.tokens, grad=grad)
    print(f"threads={torch.get_num_threads()} prompt={args.prompt} group={args.group} "
          f"tokens={args.tokens} checkpointing={args.checkpointing} grad={grad} "
          f"automatic choice: {chosen}")
    times: dict[str, list[float]] = {p: [] for p in paths}
    logprobs = {}
    for path in paths:  # warm-up
        seconds, logprobs[path] = step(path, model, batch, grad)
        print(f"  warm-up {path} {seconds:.2f}s", flush=True)
    real = batch.mask.bool()  # [B, T]
    for path in paths:
        diff = (logprobs[path] - logprobs["plain"])[real].abs().max().item()
        print(f"  max |logprob - plain| {path}: {diff:.2e}", flush=True)
    for repeat in range(args.repeats):
        for path in paths:
            times[path].append(step(path, model, batch, grad)[0])
        print(f"  round {repeat + 1}: " + " ".join(f"{p} {t[-1]:.2f}s" for p, t in times.items()),
              flush=True)
    medians = {p: statistics.median(t) for p, t in times.items()}
    for path in paths:
        print(f"  {path:9s} median {medians[path]:.3f} s  ({path} / packed = "
              f"{medians[path] / medians['packed']:.2f}x, / tree = "
              f"{medians[path] / medians['tree']:.2f}x)  runs "
              + " ".join(f"{t:.2f}" for t in times[path]))


if __name__ == "__main__":
    main()
