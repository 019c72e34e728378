"""reasoning-gym's procedural tasks as rlvr task records, graded by reasoning-gym's own
scorer (the `reasoning-gym` extra), Countdown (TinyZero's task) among them.

    python -m rlvr.environments.ecosystem.reasoning_gym --dataset countdown \\
        --size 2000 --seed 0 --out countdown-train.jsonl

Each record's prompt is the task's question plus one line asking for the final answer in
<answer></answer>; its reference is {"dataset": name, "entry": the task's entry}; its
verifier is the plugin `VERIFIER` (list it in the run's `reward.plugins`: only the
operator names code). The verifier takes the last <answer> block and hands it to the
dataset's `score_answer` (score in [0, 1]; passed at 1).

Only datasets whose scorers were read are accepted (`DATASETS`). Countdown's scorer
parses the answer with sympy's parse_expr, which evaluates Python: its answers must be
plain arithmetic (digits, + - * /, parentheses, spaces) before the scorer sees them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any, Sequence

from rlvr.data.records import TaskRecord, write_records_jsonl
from rlvr.environments.ecosystem.optional import require
from rlvr.verifiers.base import InvalidReference, Verdict

VERIFIER = "rlvr.environments.ecosystem.reasoning_gym:ReasoningGymVerifier"
ANSWER_LINE = "Give your final answer inside <answer></answer> tags."
MAX_ANSWER_CHARS = 500
_ARITHMETIC = re.compile(r"[0-9+\-*/() .]{1,200}")
_ANY = re.compile(r".{1,%d}" % MAX_ANSWER_CHARS, re.DOTALL)
# dataset -> the answers its scorer may see (the scorer's own reading, checked by hand)
DATASETS: dict[str, re.Pattern[str]] = {
    "countdown": _ARITHMETIC,  # parse_expr: only arithmetic reaches it
    "basic_arithmetic": _ANY,  # string equality (partial credit for containment)
    "chain_sum": _ANY,  # compute_decimal_reward: a number's text
    "products": _ANY,
    "gcd": _ANY,
    "lcm": _ANY,
}
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def records(dataset: str, size: int, seed: int, config: dict[str, Any] | None = None
            ) -> list[TaskRecord]:
    """`size` tasks of `dataset` (reasoning-gym's generator, seeded: the same tasks on
    every machine) as task records graded by `VERIFIER`."""
    if dataset not in DATASETS:
        raise ValueError(f"reasoning-gym dataset {dataset!r} is not supported (supported: "
                         f"{', '.join(DATASETS)})")
    rg = require("reasoning_gym", "reasoning-gym", "reasoning-gym tasks")
    tasks = rg.create_dataset(dataset, size=size, seed=seed, **(config or {}))
    out = []
    for index in range(size):
        entry = json.loads(json.dumps(tasks[index], default=str))  # plain JSON data
        out.append(TaskRecord(prompt=f"{entry['question'].rstrip()}\n\n{ANSWER_LINE}",
                              reference={"dataset": dataset, "entry": entry},
                              verifier=VERIFIER, id=f"rg-{dataset}-{seed}-{index}",
                              metadata={"source": "reasoning-gym", "dataset": dataset}))
    return out


def extract_answer(completion: str) -> str | None:
    """The last <answer>...</answer> block's text, stripped (None: there is none)."""
    found = _ANSWER_TAG.findall(completion)
    return found[-1].strip() if found else None


class ReasoningGymVerifier:
    """reasoning-gym's `score_answer` for the record's dataset (a verifier plugin)."""

    name = "reasoning_gym"
    default_timeout_s = 5.0

    def check_reference(self, reference: Any) -> None:
        if not isinstance(reference, dict) or reference.get("dataset") not in DATASETS:
            raise InvalidReference("expected {'dataset': one of " + ", ".join(DATASETS)
                                   + ", 'entry': {...}}")
        entry = reference.get("entry")
        if not isinstance(entry, dict) or not {"question", "answer", "metadata"} <= set(entry):
            raise InvalidReference("entry must be a reasoning-gym entry (question, answer, "
                                   "metadata)")

    def verify(self, completion: str, reference: Any) -> Verdict:
        self.check_reference(reference)
        answer = extract_answer(completion)
        if answer is None:
            return Verdict.wrong("no_answer")
        return self.score(reference["dataset"], answer, reference["entry"])

    def score(self, dataset: str, answer: str, entry: dict[str, Any]) -> Verdict:
        """reasoning-gym's score of `answer` (already extracted) on `entry`."""
        if not DATASETS[dataset].fullmatch(answer):
            return Verdict.wrong("answer_not_accepted", answer=answer[:200])
        rg = require("reasoning_gym", "reasoning-gym", "the reasoning_gym verifier")
        score = float(rg.get_score_answer_fn(dataset)(answer, entry))
        score = min(1.0, max(0.0, score))
        return Verdict(score, score >= 1.0, "correct" if score >= 1.0 else "wrong_answer",
                       {"answer": answer[:200], "scorer": f"reasoning_gym:{dataset}"})


write_jsonl = write_records_jsonl  # the `--out` file (rlvr.data.records)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write reasoning-gym tasks as rlvr records")
    parser.add_argument("--dataset", required=True, choices=sorted(DATASETS))
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    write_jsonl(records(args.dataset, args.size, args.seed), args.out)
    print(f"{args.size} {args.dataset} tasks -> {args.out} (verifier {VERIFIER}: list it "
          "in reward.plugins)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
