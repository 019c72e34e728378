"""The `judge` verifier: rubric grading by any OpenAI-compatible chat endpoint, with the
completion quoted as data (never instructions), strict verdict parsing, caching,
retries, a per-endpoint concurrency limit and token/cost counters. See verifier.py."""

from rlvr.verifiers.judge.verifier import COUNTERS, JudgeVerifier

__all__ = ["COUNTERS", "JudgeVerifier"]
