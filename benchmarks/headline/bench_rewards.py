"""The cheap reward of bench_vs_trl.py as an rlvr verifier: the completion's length in
characters, capped at the reference, over the cap - the same as the TRL side's
char_length_reward. Characters rather than tokens: with a 32-token limit nearly every
completion uses all 32 tokens, so a token count gives every sample of a group the same
reward, zero advantages and no learning signal; character counts differ between samples.
Named as a plugin (`reward.plugins=[benchmarks.headline.bench_rewards:CharLengthReward]`)
and imported by that name in the trainer and its verifier workers, with the repository
root on PYTHONPATH."""

from __future__ import annotations

from typing import Any

from rlvr.verifiers.base import InvalidReference, Verdict


def char_length_score(text: str, cap: int) -> float:
    return min(len(text), cap) / cap


class CharLengthReward:
    def check_reference(self, reference: Any) -> None:
        if not isinstance(reference, int) or reference < 1:
            raise InvalidReference("reference: the length cap in characters, a positive integer")

    def verify(self, completion: str, reference: Any) -> Verdict:
        score = char_length_score(completion, reference)
        return Verdict(score, score == 1.0, "length", {"characters": len(completion)})
