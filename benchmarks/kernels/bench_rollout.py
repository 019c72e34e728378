"""Rollout engine speed: our KV-cache sampling loop vs transformers' `generate`.

Rows: the engine with rlvr's Llama decode forward (`fast_decode=True`, the default), the
same loop through transformers' forward and DynamicCache (`fast_decode=False`), and the
peer, `model.generate(do_sample=True, output_logits=True, return_dict_in_generate=True)`
on the same model and prompts followed by what the trainer would still need to do with
its output (log_softmax(logits / T) of the chosen tokens, finish reasons, text). All
produce the same information; the table reports tokens/s and ratios to the peer,
medians of several alternating rounds, in one process.

    python -m benchmarks.kernels.bench_rollout [--rounds 5] [--prompts 32] [--n 8] [--new 24]
    python -m benchmarks.kernels.bench_rollout --model smollm2-135m-instruct --prompts 1 --n 8 \
        --new 32 --threads 2      # bench_vs_trl's workload
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
    parser.add_argument("--model", default="", help="anything rlvr.models.resolve_model "
                        "takes (default: the tiny character-level Llama)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, tokenizer, prompts = load(args.model, args.prompts)
    engines = {"fast decode": HFRolloutEngine(model, tokenizer, fast_decode=True),
               "transformers forward": HFRolloutEngine(model, tokenizer, fast_decode=False)}
    rates: dict[str, list[float]] = {name: [] for name in [*engines, "model.generate"]}
    for r in range(args.rounds):
        for name, engine in engines.items():
            engine.sync_weights(model)  # count the weight snapshot, as every RL step does
            began = time.perf_counter()
            out = engine.generate(prompts, args.n, SamplingParams(max_new_tokens=args.new,
                                                                  temperature=1.0, seed=r))
            tokens = sum(len(c.token_ids) for g in out for c in g)
            rates[name].append(tokens / (time.perf_counter() - began))
        began = time.perf_counter()
        with torch.inference_mode():
            tokens, _, _ = with_generate(model, tokenizer, prompts, args.n, args.new, 1.0)
        rates["model.generate"].append(tokens / (time.perf_counter() - began))
    peer = statistics.median(rates["model.generate"])
    print(f"model {args.model or 'tiny'}, rows {args.prompts * args.n}, new tokens {args.new}, "
          f"threads {args.threads}, rounds {args.rounds}")
    for name, values in rates.items():
        rate = statistics.median(values)
        print(f"{name:22s} {rate:9.0f} tokens/s  {rate / peer:5.2f}x model.generate")
    return 0


def load(name: str, count: int):
    """(model, tokenizer, prompts): the tiny Llama with arithmetic prompts, or a real
    model with short questions in its chat template."""
    if not name:
        tokenizer = char_tokenizer()
        prompts = [f"<s>{10 + i * 7 % 90}+{10 + i * 13 % 90}=" for i in range(count)]
        return tiny_llama(tokenizer).eval(), tokenizer, prompts
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rlvr.models import resolve_model

    directory = resolve_model(name)
    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
    questions = [f"What is {10 + i * 7 % 90} + {10 + i * 13 % 90}? Explain." for i in range(count)]
    prompts = [tokenizer.apply_chat_template([{"role": "user", "content": q}], tokenize=False,
                                             add_generation_prompt=True) for q in questions]
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer, prompts


if __name__ == "__main__":
    raise SystemExit(main())
