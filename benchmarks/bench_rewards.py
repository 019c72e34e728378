"""The cheap reward of bench_vs_trl.py as an rlvr verifier: completion length in tokens,
capped at the reference (the max completion length), over the cap - the same as the
TRL side's length_reward. Imported by name ("bench_rewards:TokenLengthReward") in the
trainer and its verifier workers, with benchmarks/ on PYTHONPATH."""

from __future__ import annotations

import os
from typing import Any

from rlvr.verifiers.base import InvalidReference, Verdict


class TokenLengthReward:
    def __init__(self) -> None:
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(os.environ["RLVR_BENCH_TOKENIZER"])

    def check_reference(self, reference: Any) -> None:
        if not isinstance(reference, int) or reference < 1:
            raise InvalidReference("reference: the length cap, a positive integer")

    def verify(self, completion: str, reference: Any) -> Verdict:
        tokens = len(self.tokenizer(completion, add_special_tokens=False)["input_ids"])
        score = min(tokens, reference) / reference
        return Verdict(score, score == 1.0, "length", {"tokens": tokens})
