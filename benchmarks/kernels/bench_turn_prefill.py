"""Multi-turn episodes: the HF engine with and without prefix reuse (sampling.reuse_prefix).

The workload is the episode runner's (rlvr.episodes.runner): turn 1 samples G rows of
each prompt; every later turn continues every row with the tokens it sampled and an
observation (a fixed user message in the model's chat template), n = 1. With reuse each
later turn prefills only the observation (and the last sampled token); without, the
whole transcript. Same seeds both ways, so both sample the same tokens (checked).
Reports seconds per episode batch (median of --rounds, alternating) and the prompt
tokens each way prefilled.

    python -m benchmarks.kernels.bench_turn_prefill --model smollm2-135m-instruct
    python -m benchmarks.kernels.bench_turn_prefill        # the tiny Llama, a smoke run
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

import torch

from benchmarks.kernels.bench_rollout import load
from rlvr.rollout.base import SamplingParams
from rlvr.rollout.hf import HFRolloutEngine


def episode_batch(engine, prompts, observation, n, turns, params):
    """The runner's calls for `turns` turns; returns every row's transcript tokens."""
    out = engine.generate_ids(prompts, n, replace(params, keep_prefix=turns > 1))
    rows = [c for group in out for c in group]
    for turn in range(2, turns + 1):
        contexts = [c.prompt_ids + c.token_ids + observation for c in rows]
        step = replace(params, seed=params.seed + turn, keep_prefix=turn < turns)
        rows = [group[0] for group in engine.generate_ids(contexts, 1, step)]
    return [c.prompt_ids + c.token_ids for c in rows]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--new", type=int, default=32)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--fast-decode", type=int, default=1, help="1 = rlvr's decode "
                        "forward, 0 = transformers' forward and cache")
    parser.add_argument("--model", default="", help="anything rlvr.models.resolve_model "
                        "takes (default: the tiny character-level Llama)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, tokenizer, texts = load(args.model, args.prompts)
    prompts = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
    observation = _observation(tokenizer, bool(args.model))
    params = SamplingParams(max_new_tokens=args.new, temperature=1.0, seed=3)
    engines = {reuse: HFRolloutEngine(model, tokenizer, fast_decode=bool(args.fast_decode),
                                      reuse_prefix=reuse) for reuse in (True, False)}
    seconds: dict[bool, list[float]] = {True: [], False: []}
    transcripts = {}
    for engine in engines.values():  # warm-up, untimed: kernels, weight snapshots
        episode_batch(engine, prompts[:1], observation, 1, 2, replace(params, max_new_tokens=2))
        engine.prefixes.stats = dict.fromkeys(engine.prefixes.stats, 0)
    for _ in range(args.rounds):
        for reuse, engine in engines.items():
            began = time.perf_counter()
            transcripts[reuse] = episode_batch(engine, prompts, observation, args.n,
                                               args.turns, params)
            seconds[reuse].append(time.perf_counter() - began)
    same = transcripts[True] == transcripts[False]
    print(f"{args.model or 'tiny llama'}: {args.prompts} prompts x {args.n} rows, "
          f"{args.turns} turns of <= {args.new} tokens, {args.threads} threads, "
          f"fast_decode={args.fast_decode}; same tokens both ways: {same}")
    for reuse in (False, True):
        stats = engines[reuse].prefixes.stats
        per_round = {k: v // args.rounds for k, v in stats.items()}
        print(f"  reuse_prefix={str(reuse).lower():5}  median {statistics.median(seconds[reuse]):.2f} s"
              f"  (all: {', '.join(f'{s:.2f}' for s in seconds[reuse])})  prefilled "
              f"{per_round['prefilled_tokens']} tokens, reused {per_round['reused_tokens']}"
              " per batch")
    return 0 if same else 1


def _observation(tokenizer, chat: bool) -> list[int]:
    if not chat:
        return tokenizer("\n\nUser: again\n\nAssistant:", add_special_tokens=False)["input_ids"]
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Check each step of your answer and try again."}],
        tokenize=False, add_generation_prompt=True)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


if __name__ == "__main__":
    raise SystemExit(main())
