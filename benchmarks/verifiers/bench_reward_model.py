"""`rlvr rm-train` on a verifier-labelled preference set: does a small reward model learn
which arithmetic answers are right, and what does it cost on this CPU?

    PYTHONPATH=src python -m benchmarks.verifiers.bench_reward_model [--model smollm2-135m-instruct]
        [--train 256] [--held-out 96] [--epochs 2] [--lr 2e-5] [--run-dir DIR]

Pairs: for each problem "What is A + B?" (the arithmetic task, 2-digit operands, its
train and held-out splits never share a problem) two completions, "The answer is
\\boxed{S}." with the true sum and with a sum off by 1..20; the math verifier labels
them (the one it passes is chosen; a pair it cannot separate is dropped). Held-out pairs
come from the held-out problems.
Last line: rm: held-out pairwise accuracy A0 -> A1 (N pairs), T s training, S steps
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rlvr.data.arithmetic import ArithmeticTask
from rlvr.verifiers.math.verifier import MathVerifier


def labelled_pairs(split: str, n: int, seed: int) -> list[dict]:
    """`n` pairs on distinct problems of `split`, ordered by the math verifier."""
    task = ArithmeticTask(min_digits=2, max_digits=2, ops=("+",),
                          template="What is {a} + {b}?")
    rng, verifier, pairs = random.Random(seed), MathVerifier(), []
    for record in task.generate(n, split, seed):
        right = int(record.reference)
        wrong = right + rng.choice([-1, 1]) * rng.randint(1, 20)
        texts = [f"The answer is \\boxed{{{v}}}." for v in (right, wrong)]
        rng.shuffle(texts)
        passed = [verifier.verify(t, record.reference).passed for t in texts]
        if passed.count(True) != 1:
            continue
        chosen = texts[passed.index(True)]
        rejected = texts[passed.index(False)]
        pairs.append({"prompt": record.prompt, "chosen": chosen, "rejected": rejected})
    return pairs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--train", type=int, default=256)
    p.add_argument("--held-out", type=int, default=96)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--run-dir", default="")
    args = p.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-rm-"))
    for name, split, n, seed in (("train", "train", args.train, 0),
                                 ("held", "test", args.held_out, 1)):
        rows = labelled_pairs(split, n, seed)
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_dir = args.run_dir or str(root / "run")
    command = [sys.executable, "-m", "rlvr", "rm-train", f"model.path={args.model}",
               f"data.path={root / 'train.jsonl'}", f"data.eval_path={root / 'held.jsonl'}",
               f"train.epochs={args.epochs}", f"train.batch_size={args.batch_size}",
               f"train.lr={args.lr}", "train.max_length=128", "--log-every", "8",
               "--run-dir", run_dir]
    began = time.perf_counter()
    # its progress lines go straight to our stderr; its summary line comes back
    out = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
    wall = time.perf_counter() - began
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    meta = json.loads((Path(run_dir) / "model" / "rlvr_reward_model.json").read_text())
    print(json.dumps({"wall_s": round(wall, 1), **summary, "eval": meta["eval"]}))
    print(f"rm: held-out pairwise accuracy {summary['accuracy_before']:.3f} -> "
          f"{summary['accuracy_after']:.3f} ({meta['eval']['after']['pairs']} pairs), "
          f"{summary['seconds']:.0f} s training, {summary['steps']} steps")


if __name__ == "__main__":
    main()
