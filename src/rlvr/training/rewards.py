"""Grades -> rewards: verify every attempt in the worker pool, shape rewards, and
summarise them for metrics (mean, accuracy, per-component means)."""

from __future__ import annotations

import json
from collections import defaultdict
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

import torch

from rlvr.algorithms import soft_overlong_penalty
from rlvr.data.records import TaskRecord, prompt_text
from rlvr.config import ConfigError
from rlvr.training.config import RewardConfig, backend_problem
from rlvr.training.config_reward import install_plugins
from rlvr.verifiers.base import Verdict
from rlvr.verifiers.pool import BatchVerifier, Case, VerifierPool
from rlvr.verifiers.registry import get_verifier, spec_for

if TYPE_CHECKING:
    from rlvr.training.config import TrainConfig


def check_reward_backend(reward: RewardConfig) -> None:
    """ConfigError naming the reward field when its backend cannot run here (Ray not
    installed, a remote server that does not answer or refuses the token); cheap, so
    `train()` calls it before building anything."""
    problem = backend_problem(reward)
    if problem:
        message, field = problem
        raise ConfigError(message, f"reward.{field}")
    try:  # before the data loads: its rows may name the run's plugins
        install_plugins(reward)
    except ConfigError as exc:
        raise ConfigError(exc.bare_message, "reward.plugins") from None
    if reward.backend == "remote":
        from rlvr.serve.client import ServeError
        from rlvr.serve.remote_pool import RemoteVerifierPool

        try:
            with RemoteVerifierPool(reward.remote_urls, token=reward.remote_token or None
                                    ) as pool:
                pool.start()
        except ServeError as exc:
            raise ConfigError(str(exc), "reward.remote_urls") from None


def verifier_pool(reward: RewardConfig, preload: Iterable[str] = ()) -> BatchVerifier:
    """The verifier pool `reward` asks for: worker processes, Ray actors
    (reward.backend=ray) or `rlvr serve` servers (remote). Not started: the first batch
    (or `start()`) starts it."""
    check_reward_backend(reward)
    if reward.backend == "ray":
        from rlvr.verifiers.ray_pool import RayVerifierPool

        return RayVerifierPool(workers=reward.workers or None, timeout_s=reward.timeout_s,
                               preload=preload, address=reward.ray_address,
                               plugins=reward.plugins)
    if reward.backend == "remote":
        from rlvr.serve.remote_pool import RemoteVerifierPool

        return RemoteVerifierPool(reward.remote_urls, token=reward.remote_token or None,
                                  timeout_s=reward.timeout_s)
    return VerifierPool(workers=reward.workers or None, timeout_s=reward.timeout_s,
                        preload=preload, plugins=reward.plugins)


def run_verifier_names(cfg: "TrainConfig", records: Sequence[TaskRecord],
                       evaluation: bool = True) -> list[str]:
    """The verifier names a run's pool preloads: reward.verifier (else every training
    record's own) and, with `evaluation`, eval.verifier."""
    names = {cfg.reward.verifier} if cfg.reward.verifier else {r.verifier for r in records}
    if evaluation:
        names |= {cfg.eval.verifier} - {""}
    return sorted(names)


@contextmanager
def scoring_pool(cfg: "TrainConfig", records: Sequence[TaskRecord],
                 device: torch.device | str | None,
                 evaluation: bool = True) -> Iterator["LocalScoring"]:
    """The run's grading as the trainer builds it, closed on exit: the pool reward.backend
    asks for (reward.workers, timeout_s, plugins), preloaded with `run_verifier_names`,
    behind LocalScoring (in-process verifiers, reward models, score on `device`). The
    trainer's process and the asynchronous rollout producer (rlvr.training.producer)
    both build theirs here, so both grade with the same verifiers and options."""
    with verifier_pool(cfg.reward, preload=run_verifier_names(cfg, records, evaluation)
                       ) as workers:
        yield LocalScoring(workers, device)


def verify_groups(pool: BatchVerifier, records: Sequence[TaskRecord],
                  texts: Sequence[Sequence[str]], verifier: str = "",
                  options: dict[str, Any] | None = None) -> list[list[Verdict]]:
    """One verdict per answer text, same [P][G] nesting (groups may differ in size);
    `verifier` (with `options`) overrides the records' own verifier and options."""
    def case(record: TaskRecord, text: str, prompt: str) -> Case:
        name, chosen = (verifier, options or {}) if verifier else (record.verifier,
                                                                  record.options)
        return Case(name, text, record.reference, dict(chosen), prompt=prompt)

    cases = []
    for record, group in zip(records, texts):
        prompt = prompt_text(record)  # the task text, once per group
        cases.extend(case(record, text, prompt) for text in group)
    flat = iter(pool.verify(cases) if cases else [])  # every episode graded by its env
    return [[next(flat) for _ in group] for group in texts]


def grade_episodes(pool: BatchVerifier, records: Sequence[TaskRecord],
                   episodes: Sequence[Sequence[Any]], verifier: str = "",
                   options: dict[str, Any] | None = None
                   ) -> tuple[list[list[Verdict]], torch.Tensor]:
    """Verdicts [P][G] and rewards [P, G] of a batch of episodes (rlvr.episodes): the
    verifier pool grades, in one batch, the final text of every episode the environment
    left ungraded (reward None); the others keep the environment's reward, with a
    verdict saying so (its score the reward clipped to [0, 1]; passed: the last
    reply's info["passed"] when given, else reward > 0)."""
    texts = [[e.final_text for e in group if e.reward is None] for group in episodes]
    graded = iter(v for group in verify_groups(pool, records, texts, verifier, options)
                  for v in group)
    verdicts, rewards = [], []
    for group in episodes:
        verdicts.append([next(graded) if e.reward is None else _environment_verdict(e)
                         for e in group])
        rewards.append([v.score if e.reward is None else e.reward
                        for e, v in zip(group, verdicts[-1])])
    return verdicts, torch.tensor(rewards, dtype=torch.float32)  # [P, G]


def _environment_verdict(episode: Any) -> Verdict:
    reward = float(episode.reward)
    replies = episode.info.get("env_info") or [{}]
    passed = replies[-1].get("passed", reward > 0) if isinstance(replies[-1], dict) else False
    reason = "environment" if episode.end_reason in ("done", "max_turns") else \
        episode.end_reason.split(":", 1)[0]
    return Verdict(min(1.0, max(0.0, reward)), bool(passed), reason,
                   {"reward": reward, "end_reason": episode.end_reason})


class LocalScoring:
    """A BatchVerifier that scores the items of in-process verifiers (a reward model)
    itself, batched, on `device` (the policy's), and hands every other item to `pool`
    (worker processes, Ray, servers). The trainer wraps its pool in one, so training
    steps and held-out evaluations both score reward models here, with one copy of the
    weights, instead of one copy per worker."""

    def __init__(self, pool: BatchVerifier, device: torch.device | str | None = None) -> None:
        self.pool, self.device = pool, device

    @property
    def restarts(self) -> int:
        return self.pool.restarts

    def verify(self, cases: Sequence[Case]) -> list[Verdict]:
        return verify_cases(self.pool, cases, self.device)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> "LocalScoring":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def verify_cases(pool: BatchVerifier, cases: Sequence[Case],
                 device: torch.device | str | None = None) -> list[Verdict]:
    """Verdicts in order: in-process verifiers' cases scored here in one batch per
    (verifier, options), on `device` when given; every other case through `pool`."""
    local: dict[str, list[int]] = defaultdict(list)  # (verifier, options) key -> indices
    for index, c in enumerate(cases):
        if _in_process(c.verifier):
            local[json.dumps([c.verifier, c.options], sort_keys=True, default=str)
                  ].append(index)
    results: list[Verdict | None] = [None] * len(cases)
    for indices in local.values():
        first = cases[indices[0]]
        extra = {"device": str(device)} if device is not None else {}
        scorer: Any = get_verifier(first.verifier, **{**first.options, **extra})
        verdicts = scorer.verify_batch([cases[i].completion for i in indices],
                                       [cases[i].prompt for i in indices])
        for i, verdict in zip(indices, verdicts):
            results[i] = verdict
    rest = [i for i, v in enumerate(results) if v is None]
    for i, verdict in zip(rest, pool.verify([cases[i] for i in rest]) if rest else []):
        results[i] = verdict
    return [v for v in results if v is not None]


def _in_process(name: str) -> bool:
    try:
        return spec_for(name).in_process
    except KeyError:  # an unknown name: the pool answers with an error verdict naming it
        return False


def reward_tensor(scores: torch.Tensor, lengths: torch.Tensor,
                  overlong: str, max_new_tokens: int, buffer: int) -> torch.Tensor:
    """[P, G] rewards: the graded scores [P, G], plus DAPO's soft length penalty when
    asked. `lengths` [P, G] completion lengths in tokens (the model's own)."""
    rewards = scores.to(torch.float32)  # [P, G]
    if overlong == "soft":
        penalty = soft_overlong_penalty(lengths.flatten(), max_new_tokens, buffer)  # [P*G]
        rewards = rewards + penalty.view_as(rewards)
    return rewards


def verdict_metrics(verdicts: Sequence[Sequence[Verdict]], prefix: str = "") -> dict[str, float]:
    """Mean score, accuracy (share passed), the mean of every numeric component a
    verifier reports in details["components"] (composite verifiers), and the sum of
    every counter in details["counters"] (the judge's tokens and cost)."""
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
    metrics.update(counter_totals(flat, prefix))
    return metrics


def counter_totals(verdicts: Sequence[Verdict], prefix: str = "") -> dict[str, float]:
    """Sums of the counters verifiers report in details["counters"] (the judge's
    requests, cache hits, tokens, cost, errors: "judge/prompt_tokens", ...) over a batch."""
    totals: dict[str, float] = defaultdict(float)
    for v in verdicts:
        for name, value in (v.details.get("counters") or {}).items():
            number = _number(value)
            if number is not None:
                totals[f"{prefix}{name}"] += number
    return dict(sorted(totals.items()))


def _number(value: Any) -> float | None:
    if isinstance(value, dict):
        value = value.get("score")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None
