"""The algorithm section of the config as the objects the loop calls, built once.

`build_algorithm` runs twice: when the config loads (`AlgorithmConfig.validate`), so a
misspelled name or option fails before any model is built, naming the field and the
known names; and when the trainer is built. Each component gets only its own options
(`algorithm.policy_loss: {name: gspo, eps_low: ...}`), so a bare name means that
component with its own defaults.

`rollout_correction: auto` (the default) depends on the engine, known only when the
trainer is built: `none` when its log-probs are the trainer's numbers, else truncated
IS at threshold 2 (`correction_for`); at config load it is checked as `none`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

import torch

from rlvr.algorithms import (ROLLOUT_CORRECTIONS, advantage_estimator, kl_estimator,
                             loss_aggregation, policy_loss, rollout_correction)
from rlvr.algorithms.loss_terms import EntropyBonus, KLPenalty
from rlvr.algorithms.objective import Objective
from rlvr.config import ConfigError, Named

if TYPE_CHECKING:
    from rlvr.training.config import AlgorithmConfig

# How the loop's own statistics combine over micro-batches (rlvr.training.accumulate).
LOOP_STATS: Mapping[str, str] = {"policy_loss": "sum", "loss": "sum", "kl": "mean",
                                 "entropy": "mean"}


@dataclass(frozen=True)
class Algorithm:
    advantage: Any          # [P, G] rewards -> [P, G] advantages
    policy_loss: Any        # rlvr.algorithms.policy_loss.PolicyLoss
    aggregate: Any          # rlvr.algorithms.aggregation.LossAggregation
    kl: Callable            # per-token KL estimator (loss term, reward penalty, metric)
    terms: tuple[Any, ...]  # further loss terms (rlvr.algorithms.loss_terms)
    correction: Any = None  # rlvr.algorithms.rollout_correction.RolloutCorrection

    @property
    def stat_reductions(self) -> dict[str, str]:
        return {**self.policy_loss.stat_reductions, **LOOP_STATS}

    @functools.cached_property
    def objective(self) -> Objective:
        """The update's loss: the policy loss, the further terms, the KL metric."""
        return Objective(self.policy_loss, self.terms, self.kl)

    @functools.cached_property
    def empty_stats(self) -> dict[str, float]:
        """The policy loss's statistics on a batch of no rows (its own convention for
        "nothing measured": e.g. clip fractions 0, ratios 1)."""
        none = torch.zeros(0, 1)  # [0, T]
        out = self.policy_loss(none, none, torch.zeros(0), none)
        return {name: float(value) for name, value in out.stats.items()}


# What `rollout_correction: auto` becomes for an engine whose log-probs are not the
# trainer's (Yao et al. 2025 truncate at 2).
AUTO_CORRECTION = Named("tis", {"threshold": 2.0})


def build_algorithm(a: "AlgorithmConfig", max_length: int,
                    logprobs_match_trainer: bool = True) -> Algorithm:
    """max_length: the generation limit, the default of the "constant" aggregation;
    logprobs_match_trainer: the engine's declaration, which resolves `auto`."""
    advantage, loss, agg = a.advantage, a.policy_loss, a.aggregation
    agg_options = dict(agg.options)
    agg_length = agg_options.pop("max_length", max_length)
    parts = {
        "advantage": _named("advantage",
                            lambda: advantage_estimator(advantage.name, **advantage.options)),
        "policy_loss": _named("policy_loss", lambda: policy_loss(loss.name, **loss.options)),
        "aggregation": _named("aggregation",
                              lambda: loss_aggregation(agg.name, agg_length, **agg_options)),
    }
    kl = _named("kl_estimator", lambda: kl_estimator(a.kl_estimator))
    correction = _named("rollout_correction",
                        lambda: correction_for(a.rollout_correction, logprobs_match_trainer))
    terms: list[Any] = []
    if a.kl_beta > 0 and a.kl_in == "loss":
        terms.append(KLPenalty(a.kl_beta, a.kl_estimator))
    if a.entropy_coef > 0:
        terms.append(EntropyBonus(a.entropy_coef))
    return Algorithm(parts["advantage"], parts["policy_loss"], parts["aggregation"], kl,
                     tuple(terms), correction)


def correction_for(setting: Named, logprobs_match_trainer: bool) -> Any:
    """The configured rollout correction; `auto`: none when the engine's log-probs are the
    trainer's numbers (nothing to correct), else AUTO_CORRECTION."""
    if setting.name == "auto":
        if setting.options:
            raise ValueError("rollout correction 'auto' takes no options; name the "
                             "correction instead, e.g. {name: tis, threshold: 1.5}")
        setting = Named("none") if logprobs_match_trainer else AUTO_CORRECTION
    elif setting.name not in ROLLOUT_CORRECTIONS:
        raise ValueError(f"unknown rollout correction {setting.name!r}; known: auto, "
                         f"{', '.join(sorted(ROLLOUT_CORRECTIONS))}")
    return rollout_correction(setting.name, **setting.options)


def _named(field: str, build: Callable[[], Any]) -> Any:
    """build(), with a bad name, option or option value reported as that field's error."""
    try:
        return build()
    except (ValueError, TypeError) as exc:
        raise ConfigError(str(exc), field) from None
