"""Grades -> rewards: verify every attempt in the worker pool, shape rewards, and
summarise them for metrics (mean, accuracy, per-component means)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

import torch

from rlvr.algorithms import soft_overlong_penalty
from rlvr.data.records import TaskRecord, prompt_text
from rlvr.rollout.base import Completion
from rlvr.verifiers.base import Verdict
from rlvr.verifiers.pool import Case, VerifierPool


def verify_groups(pool: VerifierPool, records: Sequence[TaskRecord],
                  groups: Sequence[Sequence[Completion]], verifier: str = "",
                  options: dict[str, Any] | None = None) -> list[list[Verdict]]:
    """One verdict per completion, same [P][G] nesting; `verifier` (with `options`)
    overrides the records' own verifier and options."""
    def case(record: TaskRecord, text: str, prompt: str) -> Case:
        name, chosen = (verifier, options or {}) if verifier else (record.verifier,
                                                                  record.options)
        return Case(name, text, record.reference, dict(chosen), prompt=prompt)

    cases = []
    for record, group in zip(records, groups):
        prompt = prompt_text(record)  # the task text, once per group
        cases.extend(case(record, c.text, prompt) for c in group)
    flat = pool.verify(cases)
    size = len(groups[0]) if groups else 0
    return [flat[i * size:(i + 1) * size] for i in range(len(groups))]


def reward_tensor(verdicts: Sequence[Sequence[Verdict]], lengths: torch.Tensor,
                  overlong: str, max_new_tokens: int, buffer: int) -> torch.Tensor:
    """[P, G] rewards: verdict scores, plus DAPO's soft length penalty when asked.
    `lengths` [P, G] completion lengths in tokens."""
    rewards = torch.tensor([[v.score for v in group] for group in verdicts],
                           dtype=torch.float32)  # [P, G]
    if overlong == "soft":
        penalty = soft_overlong_penalty(lengths.flatten(), max_new_tokens, buffer)  # [P*G]
        rewards = rewards + penalty.view_as(rewards)
    return rewards


def verdict_metrics(verdicts: Sequence[Sequence[Verdict]], prefix: str = "") -> dict[str, float]:
    """Mean score, accuracy (share passed), and the mean of every numeric component a
    verifier reports in details["components"] (composite verifiers)."""
    flat = [v for group in verdicts for v in group]
    if not flat:
        return {}
    metrics = {f"{prefix}score/mean": sum(v.score for v in flat) / len(flat),
               f"{prefix}accuracy": sum(v.passed for v in flat) / len(flat)}
    components: dict[str, list[float]] = defaultdict(list)
    for v in flat:
        for name, value in (v.details.get("components") or {}).items():
            number = _number(value)
            if number is not None:
                components[name].append(number)
    for name, values in sorted(components.items()):
        metrics[f"{prefix}reward/{name}"] = sum(values) / len(values)
    return metrics


def _number(value: Any) -> float | None:
    if isinstance(value, dict):
        value = value.get("score")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None
