"""Chunked token_logprobs / token_entropy against the naive full-tensor computation.

Peer: log_softmax(logits.float() / temperature).gather(...) and the matching entropy,
forward + backward on bf16 logits. Reports, per implementation, the extra peak memory
of the process during one forward+backward (ru_maxrss, each measured in a fresh
subprocess) and the median wall time of several runs; then chunked / naive ratios.

    PYTHONPATH=src python -m benchmarks.kernels.bench_logprobs [--batch 4 --time 256 --vocab 32000]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import torch

from rlvr.algorithms import token_entropy, token_logprobs


def naive(logits, ids, temperature):
    logp = torch.log_softmax(logits.float() / temperature, dim=-1)  # [B, T, V]
    entropy = -(logp.exp() * logp).sum(-1)  # [B, T]
    return logp.gather(-1, ids[..., None]).squeeze(-1), entropy


def chunked(logits, ids, temperature):
    return token_logprobs(logits, ids, temperature), token_entropy(logits, temperature)


IMPLEMENTATIONS = {"naive": naive, "chunked": chunked}


def one_step(impl, logits, ids):
    logits.grad = None
    logp, entropy = IMPLEMENTATIONS[impl](logits, ids, 0.9)
    (logp.sum() + entropy.sum()).backward()


def inputs(args):
    torch.manual_seed(0)
    logits = torch.randn(args.batch, args.time, args.vocab).to(torch.bfloat16)
    return logits.requires_grad_(), torch.randint(0, args.vocab, (args.batch, args.time))


def peak_child(args) -> None:
    """Run in a fresh process: print the extra peak RSS (MiB) of one step."""
    logits, ids = inputs(args)
    logits.grad = torch.zeros_like(logits)  # the gradient buffer both implementations need
    logits.grad = None
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    one_step(args.impl, logits, ids)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"extra_peak_mib": (after - before) / 1024}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--time", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--impl", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.impl:
        return peak_child(args)
    torch.set_num_threads(1)
    logits, ids = inputs(args)
    results = {}
    for impl in IMPLEMENTATIONS:
        child = subprocess.run([sys.executable, "-m", "benchmarks.kernels.bench_logprobs",
                                "--impl", impl, "--batch", str(args.batch),
                                "--time", str(args.time), "--vocab", str(args.vocab)], capture_output=True, text=True, check=True)
        results[impl] = json.loads(child.stdout)
    for _ in range(args.repeats):  # interleaved, so noise hits both alike
        for impl in IMPLEMENTATIONS:
            start = time.perf_counter()
            one_step(impl, logits, ids)
            results[impl].setdefault("seconds", []).append(time.perf_counter() - start)
    fp32_mib = logits.numel() * 4 / 2**20
    print(f"logits bf16 [{args.batch}, {args.time}, {args.vocab}]; one fp32 copy = "
          f"{fp32_mib:.0f} MiB")
    for impl, r in results.items():
        print(f"{impl:8s} extra peak {r['extra_peak_mib']:7.0f} MiB   median "
              f"{statistics.median(r['seconds']):.3f} s over {args.repeats}")
    n, c = results["naive"], results["chunked"]
    print(f"chunked/naive: peak memory {c['extra_peak_mib'] / n['extra_peak_mib']:.2f}, "
          f"time {statistics.median(c['seconds']) / statistics.median(n['seconds']):.2f}")


if __name__ == "__main__":
    main()
