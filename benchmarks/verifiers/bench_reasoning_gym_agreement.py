"""Where reasoning-gym's scorers and rlvr's `math` verifier both apply, do they agree?

    PYTHONPATH=src python -m benchmarks.verifiers.bench_reasoning_gym_agreement [--size 200]

For arithmetic tasks (basic_arithmetic, chain_sum, products: a number is the answer) and
Countdown (an expression reaching a target), each task gets the same candidate answers
in several forms: the gold as written, as a decimal ("-4.0"), with thousands separators,
behind "x = ", off by one, the question's own expression, and for Countdown the bare
target number. reasoning-gym's `score_answer` sees the answer itself (passed = score
1.0); rlvr's math verifier sees it in \\boxed{} with the question as the prompt (passed =
its verdict). Reported per dataset and per form: how often both say the same.
Last line: reasoning-gym agreement: A/N pairs (P%), rg-only passes R, math-only passes M
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter, defaultdict

import reasoning_gym

from rlvr.verifiers.base import run_verifier
from rlvr.verifiers.registry import get_verifier

NUMERIC = ("basic_arithmetic", "chain_sum", "products")


def _expression(entry: dict) -> str | None:
    return entry["metadata"].get("expression")


def forms(dataset: str, entry: dict) -> dict[str, str]:
    """Candidate answers by form name (a form that does not apply is left out)."""
    gold = entry["answer"].strip()
    out = {"gold": gold}
    if dataset == "countdown":
        out["target_number"] = str(entry["metadata"]["target"])
        out["all_added"] = " + ".join(map(str, entry["metadata"]["numbers"]))
        return out
    value = int(gold)
    out["decimal"] = f"{gold}.0"
    if abs(value) >= 1000:
        out["thousands"] = f"{value:,}"
    out["with_prefix"] = f"x = {gold}"
    out["off_by_one"] = str(value + 1)
    if _expression(entry):
        out["question_expression"] = _expression(entry)
    return out


def grade(dataset: str, entry: dict, answer: str, math) -> tuple[bool, bool]:
    rg_score = reasoning_gym.get_score_answer_fn(dataset)(answer, entry)
    reference = str(entry["metadata"]["target"]) if dataset == "countdown" else entry["answer"]
    verdict = run_verifier(math, f"The answer is \\boxed{{{answer}}}.", reference,
                           prompt=entry["question"])
    return rg_score >= 1.0, verdict.passed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=200, help="tasks per dataset")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    math = get_verifier("math")
    table: dict[tuple[str, str], Counter] = defaultdict(Counter)
    examples: dict[tuple[str, str], list] = defaultdict(list)
    for dataset in (*NUMERIC, "countdown"):
        tasks = reasoning_gym.create_dataset(dataset, size=args.size, seed=args.seed)
        for index in range(args.size):
            entry = json.loads(json.dumps(tasks[index], default=str))
            for form, answer in forms(dataset, entry).items():
                rg_pass, math_pass = grade(dataset, entry, answer, math)
                key = (dataset, form)
                table[key]["pairs"] += 1
                table[key]["agree"] += rg_pass == math_pass
                table[key]["rg_only"] += rg_pass and not math_pass
                table[key]["math_only"] += math_pass and not rg_pass
                if rg_pass != math_pass and len(examples[key]) < 2:
                    examples[key].append((re.sub(r"\s+", " ", entry["question"])[:70], answer,
                                          f"rg={rg_pass} math={math_pass}"))
    print(f"{'dataset':18} {'form':20} {'pairs':>5} {'agree':>6} {'rg only':>8} {'math only':>9}")
    total = Counter()
    for (dataset, form), c in table.items():
        total.update(c)
        print(f"{dataset:18} {form:20} {c['pairs']:5d} {c['agree'] / c['pairs']:6.3f} "
              f"{c['rg_only']:8d} {c['math_only']:9d}")
        for example in examples[(dataset, form)]:
            print(f"    e.g. {example}")
    print(f"reasoning-gym agreement: {total['agree']}/{total['pairs']} pairs "
          f"({100 * total['agree'] / total['pairs']:.1f}%), rg-only passes {total['rg_only']}, "
          f"math-only passes {total['math_only']}")


if __name__ == "__main__":
    main()
