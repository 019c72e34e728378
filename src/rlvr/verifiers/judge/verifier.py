"""The `judge` verifier: a language model grades the completion against a rubric.

Flow for one item: check the reference (rubric.py) -> the pre-check for completions
that address the judge (guard.py) -> the cache -> the messages with the completion as
quoted data (prompt.py) -> one chat call (client.py) -> strict parsing (parse.py).
Every way of failing is a verdict with score 0 and its own reason, never a guess:
  judge_unparseable  the endpoint answered, but not with exactly the verdict asked for
  judge_unavailable  no answer within the retries and the deadline (or HTTP 4xx)
  addresses_judge    the pre-check flagged the completion (option injection="zero")
Counters for metrics ride in `details["counters"]` (summed per step by the trainer,
rlvr.training.rewards.verdict_metrics) and accumulate per process in `COUNTERS`.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from rlvr.verifiers.base import Verdict
from rlvr.verifiers.judge.cache import VerdictCache, cache_key
from rlvr.verifiers.judge.client import CallStats, JudgeUnavailable, post_chat
from rlvr.verifiers.judge.guard import injection_flags
from rlvr.verifiers.judge.options import parse_options
from rlvr.verifiers.judge.parse import Unparseable, parse_verdict, response_content, usage_of
from rlvr.verifiers.judge.prompt import PROMPT_VERSION, build_messages, verdict_schema
from rlvr.verifiers.judge.rubric import Rubric, parse_rubric, weighted_score

REASON_UNPARSEABLE = "judge_unparseable"
REASON_UNAVAILABLE = "judge_unavailable"
REASON_ADDRESSES_JUDGE = "addresses_judge"

# This process's totals since start, by counter name (what `details["counters"]` adds up).
COUNTERS: Counter[str] = Counter()


class JudgeVerifier:
    name = "judge"
    uses_prompt = True  # the judge sees the task the completion answers

    def __init__(self, **options: Any) -> None:
        self.options = parse_options(**options)
        self.cache = VerdictCache(self.options.cache_size, self.options.cache_dir)

    def check_reference(self, reference: Any) -> None:
        parse_rubric(reference)

    def verify(self, completion: str, reference: Any, prompt: str | None = None) -> Verdict:
        rubric = parse_rubric(reference)
        flags = injection_flags(completion, rubric.ids)
        if flags and self.options.injection == "zero":
            return _counted(Verdict(0.0, False, REASON_ADDRESSES_JUDGE,
                                    {"injection_flags": flags}), {"judge/flagged": 1})
        messages, guard = build_messages(completion, rubric, self.options.scale, prompt)
        key = cache_key([PROMPT_VERSION, self.options.endpoint.base_url, self.options.model,
                         self.options.temperature, self.options.max_tokens,
                         self.options.structured, messages])
        cached = self.cache.get(key)
        if cached is not None:
            details = {**cached["details"], "injection_flags": flags,
                       "judge": {**cached["details"]["judge"], "cached": True}}
            return _counted(Verdict(cached["score"], cached["passed"], cached["reason"], details),
                            {"judge/cache_hits": 1, "judge/flagged": int(bool(flags))})
        verdict = self._ask(messages, rubric, guard, flags)
        if verdict.reason not in (REASON_UNPARSEABLE, REASON_UNAVAILABLE):
            self.cache.put(key, {**verdict.to_dict(),
                                 "details": {k: v for k, v in verdict.details.items()
                                             if k != "counters"}})
        return verdict

    def _ask(self, messages: list[dict[str, str]], rubric: Rubric, guard: dict[str, Any],
             flags: list[str]) -> Verdict:
        o = self.options
        payload = {"model": o.model, "messages": messages, "temperature": o.temperature,
                   "max_tokens": o.max_tokens, "n": 1}
        if o.structured:
            payload["response_format"] = verdict_schema(rubric, o.scale)
        stats, began = CallStats(), time.monotonic()
        info: dict[str, Any] = {"model": o.model, "cached": False, **guard}
        counters = {"judge/flagged": int(bool(flags))}
        try:
            body = post_chat(o.endpoint, payload, stats)
        except (JudgeUnavailable, Unparseable) as exc:
            info.update(attempts=stats.attempts, retries=stats.retries,
                        latency_s=round(time.monotonic() - began, 3))
            counters.update({"judge/requests": stats.attempts, "judge/retries": stats.retries,
                             "judge/errors": 1})
            reason = REASON_UNPARSEABLE if isinstance(exc, Unparseable) else REASON_UNAVAILABLE
            counters[f"judge/{reason.removeprefix('judge_')}"] = 1
            return _counted(Verdict(0.0, False, reason, {"error": str(exc)[:1000],
                                                         "injection_flags": flags,
                                                         "judge": info}), counters)
        prompt_tokens, completion_tokens = usage_of(body)
        cost = (prompt_tokens * o.price_prompt + completion_tokens * o.price_completion) / 1000
        info.update(attempts=stats.attempts, retries=stats.retries,
                    latency_s=round(time.monotonic() - began, 3), prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens, cost=cost)
        counters.update({"judge/requests": stats.attempts, "judge/retries": stats.retries,
                         "judge/prompt_tokens": prompt_tokens,
                         "judge/completion_tokens": completion_tokens, "judge/cost": cost})
        verdict = self._grade(body, rubric, info, flags)
        if verdict.reason == REASON_UNPARSEABLE:
            counters.update({"judge/errors": 1, "judge/unparseable": 1})
        return _counted(verdict, counters)

    def _grade(self, body: Any, rubric: Rubric, info: dict[str, Any],
               flags: list[str]) -> Verdict:
        content = None
        try:
            content = response_content(body)
            scores = parse_verdict(content, rubric, self.options.scale)
        except Unparseable as exc:
            return Verdict(0.0, False, REASON_UNPARSEABLE,
                           {"error": str(exc), "raw": (content or "")[:1000],
                            "injection_flags": flags, "judge": info})
        score = min(1.0, weighted_score(rubric, scores, self.options.scale))
        passed = score >= rubric.pass_threshold - 1e-9
        return Verdict(score, passed, "passed" if passed else "below_threshold",
                       {"scores": scores, "scale": self.options.scale,
                        "pass_threshold": rubric.pass_threshold, "injection_flags": flags,
                        "judge": info})


def _counted(verdict: Verdict, counters: dict[str, float]) -> Verdict:
    """`verdict` with the counters (zeros dropped) in its details, added to COUNTERS."""
    kept = {name: value for name, value in counters.items() if value}
    COUNTERS.update(kept)
    if kept:
        verdict.details["counters"] = kept
    return verdict
