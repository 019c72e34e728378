"""Rollout engine speed: our KV-cache sampling loop vs transformers' `generate`.

Peer: `model.generate(do_sample=True, output_logits=True, return_dict_in_generate=True)`
on the same model and prompts, followed by what the trainer would still need to do
with its output (log_softmax(logits / T) of the chosen tokens, finish reasons, text).
Both produce the same information; the table reports tokens/s and the ratio, medians of
several alternating rounds, in one process.

    python benchmarks/bench_rollout.py [--rounds 5] [--prompts 32] [--n 8] [--new 24]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from rlvr.rollout.base import SamplingParams
from rlvr.rollout.hf import HFRolloutEngine
from rlvr.training.tiny import char_tokenizer, tiny_llama


def with_generate(model, tokenizer, prompts, n, new_tokens, temperature):
    rows = [p for p in prompts for _ in range(n)]
    enc = tokenizer(rows, return_tensors="pt", padding=True, add_special_tokens=False)
    out = model.generate(**enc, do_sample=True, temperature=temperature, top_k=0, top_p=1.0,
                         max_new_tokens=new_tokens, output_logits=True,
                         return_dict_in_generate=True, pad_token_id=tokenizer.pad_token_id,
                         eos_token_id=tokenizer.eos_token_id)
    new = out.sequences[:, enc["input_ids"].shape[1]:]  # [B, T]
    logits = torch.stack(out.logits, dim=1).float() / temperature  # [B, T, V]
    logprobs = torch.log_softmax(logits, -1).gather(2, new[..., None])[..., 0]  # [B, T]
    texts = tokenizer.batch_decode(new, skip_special_tokens=True)
    return int((new != tokenizer.pad_token_id).sum()), logprobs, texts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--new", type=int, default=24)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer).eval()
    engine = HFRolloutEngine(model, tokenizer)
    prompts = [f"<s>{10 + i * 7 % 90}+{10 + i * 13 % 90}=" for i in range(args.prompts)]
    ours, theirs = [], []
    for r in range(args.rounds):
        began = time.perf_counter()
        out = engine.generate(prompts, args.n, SamplingParams(max_new_tokens=args.new,
                                                              temperature=1.0, seed=r))
        tokens = sum(len(c.token_ids) for g in out for c in g)
        ours.append(tokens / (time.perf_counter() - began))
        began = time.perf_counter()
        with torch.inference_mode():
            tokens, _, _ = with_generate(model, tokenizer, prompts, args.n, args.new, 1.0)
        theirs.append(tokens / (time.perf_counter() - began))
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"rows {args.prompts * args.n}, new tokens {args.new}, threads {args.threads}, "
          f"rounds {args.rounds}")
    print(f"HFRolloutEngine      {a:9.0f} tokens/s")
    print(f"model.generate       {b:9.0f} tokens/s")
    print(f"ratio ours/generate  {a / b:9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
