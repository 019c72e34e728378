"""KL-Cov: a policy loss that holds entropy up by restraining the few tokens that drive
it down (Cui et al. 2025, "The Entropy Mechanism of Reinforcement Learning for
Reasoning Language Models", arXiv:2505.22617, section 5).

The paper shows that under policy gradient a step changes the policy's entropy by
about minus the covariance, over the sampled tokens, between a token's log-probability
and its advantage: confident tokens that are rewarded (high log-prob, high advantage)
lower entropy most. Each token's share of that covariance is its centred product

    cov_t = (logp_t - mean(logp)) * (A_t - mean(A))        (means over the valid tokens)

and only a tiny fraction of tokens carry large values. KL-Cov leaves every token's
vanilla policy-gradient term -r_t A_t unclipped, and adds a KL penalty to the top
`ratio` fraction of tokens by cov_t:

    loss_t = -r_t A_t + [t in top-k] * beta * |logp_t - logp_old_t|,
    r_t = exp(logp_t - logp_old_t),  k = max(1, floor(ratio * N)),  N valid tokens

(|log ratio| is the per-token KL estimate that the authors' own implementation uses).
cov_t is computed on detached values: it selects tokens and carries no gradient.

The selection is over the tokens one call sees: a micro-batched update
(`algorithm.micro_batch_rows`/`_tokens`) selects within each micro-batch, so k and the
means are the micro-batch's. Tokens of a zero-advantage row can be selected (their A_t
is off the mean), so the loss declares `touches_zero_advantage` and the update then
runs every row. Call shape, masking and statistics: rlvr.algorithms.policy_loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar, Mapping

import torch
from torch import Tensor

from rlvr.algorithms.policy_loss import (PolicyLossOutput, _approx_kl, _check_inputs,
                                         _ratio_stats, _zero_masked)

KL_COV_STATS: Mapping[str, str] = MappingProxyType({
    "ratio_mean": "mean", "ratio_min": "min", "ratio_max": "max", "approx_kl": "mean",
    "kl_cov_frac": "mean"})


def centred_covariance(logprobs: Tensor, advantages: Tensor, mask: Tensor) -> Tensor:
    """cov_t = (logp_t - mean logp) (A_t - mean A), the means over valid tokens; 0 at
    masked positions. logprobs [B, T], advantages [B, T] or [B, 1], mask [B, T] float."""
    valid = mask > 0  # [B, T]
    count = valid.sum().clamp(min=1)
    advantages = advantages.expand_as(logprobs)  # [B, T]
    logp = logprobs.detach()
    centred_logp = logp - (logp * mask).sum() / count  # [B, T]
    centred_adv = advantages - (advantages * mask).sum() / count  # [B, T]
    return torch.where(valid, centred_logp * centred_adv, torch.zeros_like(logp))  # [B, T]


def top_covariance(cov: Tensor, mask: Tensor, ratio: float) -> Tensor:
    """[B, T] bool: the max(1, floor(ratio * N)) valid tokens with the largest cov
    (none when no token is valid; ties go to the earlier position in row-major order)."""
    valid = (mask > 0).flatten()  # [B*T]
    n = int(valid.sum())
    chosen = torch.zeros_like(valid)
    if n == 0:
        return chosen.view_as(mask)
    k = max(1, math.floor(ratio * n))
    scores = torch.where(valid, cov.flatten(), torch.full_like(cov.flatten(), -math.inf))
    order = torch.sort(scores, descending=True, stable=True).indices  # [B*T]
    chosen[order[:k]] = True
    return chosen.view_as(mask)


@dataclass(frozen=True)
class KLCov:
    """KL-Cov (Cui et al. 2025). ratio: the fraction of valid tokens penalised (the
    paper's k; 2e-3 in its 7B runs, 2e-4 for 32B); beta: the KL coefficient (1 in the
    authors' implementation)."""

    name: ClassVar[str] = "kl_cov"
    stat_reductions: ClassVar[Mapping[str, str]] = KL_COV_STATS
    touches_zero_advantage: ClassVar[bool] = True  # see the module docstring
    ratio: float = 2e-3
    beta: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 < self.ratio <= 1.0:
            raise ValueError(f"ratio must be in (0, 1], got {self.ratio}")
        if self.beta < 0.0:
            raise ValueError(f"beta must be >= 0, got {self.beta}")

    def __call__(self, logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor,
                 mask: Tensor) -> PolicyLossOutput:
        advantages, maskf = _check_inputs(logprobs, old_logprobs, advantages, mask)
        logprobs, old_logprobs = _zero_masked(logprobs, old_logprobs, maskf)  # [B, T] x2
        log_ratio = logprobs - old_logprobs  # [B, T]
        chosen = top_covariance(centred_covariance(logprobs, advantages, maskf), maskf,
                                self.ratio)  # [B, T] bool
        penalty = self.beta * log_ratio.abs() * chosen  # [B, T]
        loss = (-torch.exp(log_ratio) * advantages + penalty) * maskf  # [B, T]
        valid = maskf > 0
        with torch.no_grad():
            stats = {**_ratio_stats(torch.exp(log_ratio.detach()), valid),
                     "approx_kl": _approx_kl(logprobs, old_logprobs, maskf),
                     "kl_cov_frac": chosen.sum().float() / valid.sum().clamp(min=1).float()}
        return PolicyLossOutput(loss=loss, stats=stats)


COV_LOSSES: dict[str, type] = {KLCov.name: KLCov}
