"""Select algorithm pieces by name, so the trainer's config holds strings and the loop
holds no string switches.

    advantage_estimator("grpo", eps=1e-6)          -> GRPO(eps=1e-6)
    policy_loss("ppo_clip", eps_high=0.28)         -> PPOClip(eps_low=0.2, eps_high=0.28)
    policy_loss("kl_cov", ratio=2e-4)              -> KLCov(ratio=2e-4, beta=1.0)
    loss_aggregation("constant", max_length=512)   -> ConstantNormalizer(max_length=512)
    loss_aggregation("token_mean", max_length=512) -> TokenMean() (max_length ignored)
    kl_estimator("k3")                             -> kl_k3
    rollout_correction("tis", threshold=1.5)       -> TruncatedIS(threshold=1.5)

Unknown names raise ValueError listing the known ones; unknown options raise
ValueError naming the option and the object.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Callable, Mapping

from torch import Tensor

from rlvr.algorithms.advantages import ADVANTAGES, AdvantageEstimator
from rlvr.algorithms.aggregation import AGGREGATIONS, LossAggregation
from rlvr.algorithms.kl import KL_ESTIMATORS
from rlvr.algorithms.cov_loss import COV_LOSSES
from rlvr.algorithms.policy_loss import POLICY_LOSSES as CLIPPED_LOSSES
from rlvr.algorithms.policy_loss import PolicyLoss
from rlvr.algorithms.rollout_correction import ROLLOUT_CORRECTIONS, RolloutCorrection


# every policy loss by name: the clipped surrogates and KL-Cov (cov_loss.py)
POLICY_LOSSES: dict[str, type] = {**CLIPPED_LOSSES, **COV_LOSSES}


def _lookup(table: Mapping[str, Any], name: str, kind: str) -> Any:
    try:
        return table[name]
    except KeyError:
        raise ValueError(f"unknown {kind} {name!r}; known: {', '.join(sorted(table))}") \
            from None


def _build(table: Mapping[str, type], name: str, kind: str, options: dict) -> Any:
    cls = _lookup(table, name, kind)
    fields = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(options) - fields)
    if unknown:
        raise ValueError(f"{kind} {name!r} has no option(s) {', '.join(unknown)}; "
                         f"options: {', '.join(sorted(fields)) or 'none'}")
    try:
        return cls(**_numbers(cls, options))
    except TypeError as exc:  # an option of the wrong type, e.g. a string for a number
        raise ValueError(f"{kind} {name!r}: {exc}") from None


def _numbers(cls: type, options: dict) -> dict:
    """Options typed float get a float from a numeric string: YAML 1.1 (PyYAML) reads
    `eps_low: 1e-3` as the string "1e-3"."""
    hints = typing.get_type_hints(cls)
    numbers = {}
    for name, value in options.items():
        hint = hints.get(name)
        if isinstance(value, str) and float in (typing.get_args(hint) or (hint,)):
            try:
                value = float(value)
            except ValueError:
                pass  # left as given: the component's own check names it
        numbers[name] = value
    return numbers


def advantage_estimator(name: str, **options: Any) -> AdvantageEstimator:
    return _build(ADVANTAGES, name, "advantage estimator", options)


def policy_loss(name: str, **options: Any) -> PolicyLoss:
    return _build(POLICY_LOSSES, name, "policy loss", options)


def loss_aggregation(name: str, max_length: int | None = None,
                     **options: Any) -> LossAggregation:
    """max_length is used by "constant" (required there) and ignored by the others, so a
    config can always pass its generation limit; other options go to the aggregation."""
    cls = _lookup(AGGREGATIONS, name, "loss aggregation")
    if "max_length" in {f.name for f in dataclasses.fields(cls)}:
        if max_length is None:
            raise ValueError(f"loss aggregation {name!r} needs max_length")
        options = {**options, "max_length": max_length}
    return _build(AGGREGATIONS, name, "loss aggregation", options)


def kl_estimator(name: str) -> Callable[[Tensor, Tensor], Tensor]:
    return _lookup(KL_ESTIMATORS, name, "KL estimator")


def rollout_correction(name: str, **options: Any) -> RolloutCorrection:
    return _build(ROLLOUT_CORRECTIONS, name, "rollout correction", options)
