"""Advantage estimators: outcome rewards of a group of samples -> per-sample advantages.

Every estimator is a small frozen dataclass with one call shape:

    estimator(rewards)   rewards: [P, G] float (P prompts x G samples of each)
                         returns: [P, G] advantages, same dtype (float32 for int input)

The advantage of a sample is broadcast over its completion tokens by the policy loss.
Rewards are outcome rewards (one number per completion, e.g. the verifier score plus
any shaping such as the overlong penalty or a per-sequence KL penalty).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol

import torch
from torch import Tensor


class AdvantageEstimator(Protocol):
    name: ClassVar[str]

    def __call__(self, rewards: Tensor) -> Tensor:
        """[P, G] rewards -> [P, G] advantages."""
        ...


def _check_rewards(rewards: Tensor) -> Tensor:
    """Validate a [P, G] reward tensor and return it as a floating tensor."""
    if not isinstance(rewards, Tensor):
        raise TypeError(f"rewards must be a torch.Tensor [P, G], got {type(rewards).__name__}")
    if rewards.dim() != 2:
        raise ValueError(f"rewards must have shape [P, G] (prompts x samples), "
                         f"got shape {tuple(rewards.shape)}")
    if not rewards.is_floating_point():
        rewards = rewards.float()
    if not torch.isfinite(rewards).all():
        raise ValueError("rewards contain NaN or inf")
    return rewards


def _zero_where_constant(advantages: Tensor, rewards: Tensor) -> Tensor:
    """Exactly 0 for groups whose rewards are all equal.

    (r - mean) is mathematically 0 there, but the float mean of e.g. [0.1, 0.1, 0.1] can
    differ from 0.1 in the last bit, and dividing that residue by a std of ~0 (+ eps)
    would turn it into a spurious signal.
    """
    constant = (rewards == rewards[:, :1]).all(dim=1, keepdim=True)  # [P, 1]
    return advantages.masked_fill(constant, 0.0)  # [P, G]


@dataclass(frozen=True)
class GRPO:
    """Group-relative advantage (Shao et al. 2024, DeepSeekMath): (r - mean_g) / (std_g + eps).

    std is the unbiased (n - 1) sample std of the group, as torch.std and the common
    open-source implementations compute it. Groups with equal rewards (zero std, or
    G == 1) get advantage 0: they carry no learning signal.
    """

    name: ClassVar[str] = "grpo"
    eps: float = 1e-6

    def __call__(self, rewards: Tensor) -> Tensor:
        rewards = _check_rewards(rewards)  # [P, G]
        if rewards.shape[1] < 2:
            return torch.zeros_like(rewards)
        mean = rewards.mean(dim=1, keepdim=True)  # [P, 1]
        std = rewards.std(dim=1, keepdim=True)  # [P, 1]
        return _zero_where_constant((rewards - mean) / (std + self.eps), rewards)  # [P, G]


@dataclass(frozen=True)
class DrGRPO:
    """Dr. GRPO advantage: r - mean_g, no division by the group std.

    Liu et al. 2025, "Understanding R1-Zero-Like Training: A Critical Perspective":
    dividing by the std up-weights groups that are nearly all right or all wrong (a
    question-difficulty bias). Pair with the constant-normaliser aggregation to also
    remove GRPO's length bias.
    """

    name: ClassVar[str] = "dr_grpo"

    def __call__(self, rewards: Tensor) -> Tensor:
        rewards = _check_rewards(rewards)  # [P, G]
        mean = rewards.mean(dim=1, keepdim=True)  # [P, 1]
        return _zero_where_constant(rewards - mean, rewards)  # [P, G]


@dataclass(frozen=True)
class RLOO:
    """REINFORCE leave-one-out (Ahmadian et al. 2024, "Back to Basics"): r_i - mean_{j != i} r_j.

    Equal to G / (G - 1) * (r_i - mean_g). Needs G >= 2 (a sample has no "others" alone).
    """

    name: ClassVar[str] = "rloo"

    def __call__(self, rewards: Tensor) -> Tensor:
        rewards = _check_rewards(rewards)  # [P, G]
        group = rewards.shape[1]
        if group < 2:
            raise ValueError(f"RLOO needs at least 2 samples per prompt, got G={group}")
        others_mean = (rewards.sum(dim=1, keepdim=True) - rewards) / (group - 1)  # [P, G]
        return _zero_where_constant(rewards - others_mean, rewards)  # [P, G]


def _whiten_batch(values: Tensor, eps: float) -> Tensor:
    """(x - mean) / (std + eps) over every element; all-equal input -> zeros."""
    if values.numel() < 2 or bool((values == values.flatten()[0]).all()):
        return torch.zeros_like(values)
    return (values - values.mean()) / (values.std() + eps)


@dataclass(frozen=True)
class ReinforcePP:
    """REINFORCE++ (Hu 2025, "REINFORCE++: ..."): rewards whitened over the whole batch.

    A = (r - mean_batch) / (std_batch + eps), mean and std over all P x G samples, no
    per-prompt baseline. In the paper the KL penalty is folded into the reward first
    (see kl.kl_reward_to_go); here the input is whatever reward the caller built.
    """

    name: ClassVar[str] = "reinforce_pp"
    eps: float = 1e-6

    def __call__(self, rewards: Tensor) -> Tensor:
        rewards = _check_rewards(rewards)  # [P, G]
        return _whiten_batch(rewards, self.eps)  # [P, G]


@dataclass(frozen=True)
class ReinforcePPBaseline:
    """REINFORCE++-baseline (Hu 2025): subtract the group mean, then divide by the batch std.

    A = (r - mean_g) normalised by mean/std over the whole batch of these centred
    values. The group mean removes per-prompt difficulty (like GRPO); normalising by
    the batch std instead of each group's std avoids GRPO's blow-up on groups with tiny
    variance. (The batch mean of the centred values is ~0; we subtract it anyway, as
    batch whitening does.)
    """

    name: ClassVar[str] = "reinforce_pp_baseline"
    eps: float = 1e-6

    def __call__(self, rewards: Tensor) -> Tensor:
        rewards = _check_rewards(rewards)  # [P, G]
        centred = _zero_where_constant(rewards - rewards.mean(dim=1, keepdim=True), rewards)
        return _whiten_batch(centred, self.eps)  # [P, G]


ADVANTAGES: dict[str, type] = {
    cls.name: cls for cls in (GRPO, DrGRPO, RLOO, ReinforcePP, ReinforcePPBaseline)
}
