"""TRL's GRPOTrainer side of bench_vs_trl.py, run in its own process (so its peak memory
is its own). Prints one JSON line: per-step seconds, tokens generated, peak RSS."""

from __future__ import annotations

import argparse
import json
import resource
import time

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from benchmarks.headline.bench_rewards import char_length_score
from benchmarks.headline.bench_vs_trl import char_cap


class StepTimer(TrainerCallback):
    def __init__(self) -> None:
        self.started = 0.0
        self.seconds: list[float] = []

    def on_step_begin(self, args, state, control, **kwargs):  # noqa: ANN001
        self.started = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
        self.seconds.append(time.perf_counter() - self.started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--prompts", required=True, help="JSON list of chat-message prompts")
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--out", default="/tmp/rlvr-bench-trl")
    parser.add_argument("--no-checkpointing", action="store_true",
                        help="turn off the activation checkpointing GRPOConfig enables by default")
    args = parser.parse_args()
    torch.manual_seed(0)
    prompts = json.loads(open(args.prompts).read())
    dataset = Dataset.from_list([{"prompt": p} for p in prompts])
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    generated: list[int] = []

    def char_length_reward(completions, completion_ids=None, **_):  # noqa: ANN001
        # The same reward as rlvr's side (bench_rewards.py): length in characters.
        generated.extend(len(ids) for ids in completion_ids)
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        return [char_length_score(t, char_cap(args.max_new_tokens)) for t in texts]

    config = GRPOConfig(
        output_dir=args.out, per_device_train_batch_size=args.group,
        num_generations=args.group, max_completion_length=args.max_new_tokens, beta=0.0,
        num_iterations=1, max_steps=args.steps, learning_rate=1e-6, logging_steps=1,
        report_to=[], save_strategy="no", use_cpu=True, bf16=False, temperature=1.0,
        gradient_accumulation_steps=1, seed=0, dataloader_num_workers=0,
        **({"gradient_checkpointing": False} if args.no_checkpointing else {}),
    )
    timer = StepTimer()
    trainer = GRPOTrainer(model=model, reward_funcs=char_length_reward, args=config,
                          train_dataset=dataset, processing_class=tokenizer, callbacks=[timer])
    trainer.train()
    print(json.dumps({"side": "trl", "step_seconds": timer.seconds,
                      "gradient_checkpointing": bool(config.gradient_checkpointing),
                      "tokens_per_step": sum(generated) / max(1, len(timer.seconds)),
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    main()
