"""Per-token estimators of KL(pi_theta || pi_ref) from log-probs of the sampled tokens.

From J. Schulman, "Approximating KL Divergence" (2020), with log_r = logp_ref - logp
evaluated at tokens sampled from pi_theta:

    k1 = -log_r = logp - logp_ref            unbiased, high variance, can be negative
    k2 = 0.5 * log_r ** 2                    biased, low variance, >= 0
    k3 = exp(log_r) - log_r - 1              unbiased, low variance, >= 0

All take logprobs [B, T] and ref_logprobs [B, T] and return [B, T]. Values at padding
positions are whatever the inputs give: multiply by the mask (or use an aggregation).

Two ways to use them (the trainer never calls these at beta == 0, and then loads no
reference model at all):
- as a loss term: per-token loss += beta * k (k with grad through logprobs; k3 is the
  usual choice, as in GRPO), then aggregate with the policy loss's aggregation;
- in the reward: a penalty without gradient. `kl_reward_per_sequence` gives
  beta * sum_t k_t per sequence [B], to subtract from the outcome reward before the
  advantage estimator (one number per completion). `kl_reward_to_go` gives the
  per-token return of the penalty, beta * sum_{s >= t} k_s [B, T], for estimators that
  work on token-level returns (REINFORCE++ as in Hu 2025, with gamma = 1): token
  advantage = outcome reward - kl_reward_to_go, then whitened with `masked_whiten`.
  k1 is the usual choice in the reward.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

# exp(log_r) overflows float32 past ~88; a log-ratio beyond +-20 is already a policy that
# has left the reference entirely, so k3 clamps there (gradient 0 beyond the clamp).
_K3_LOG_RATIO_LIMIT = 20.0


def _check(logprobs: Tensor, ref_logprobs: Tensor) -> None:
    if logprobs.shape != ref_logprobs.shape:
        raise ValueError(f"logprobs {tuple(logprobs.shape)} and ref_logprobs "
                         f"{tuple(ref_logprobs.shape)} must have the same shape")


def kl_k1(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """k1 = logp - logp_ref. [B, T] x2 -> [B, T]."""
    _check(logprobs, ref_logprobs)
    return logprobs - ref_logprobs  # [B, T]


def kl_k2(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """k2 = 0.5 * (logp - logp_ref)^2. [B, T] x2 -> [B, T]."""
    _check(logprobs, ref_logprobs)
    return 0.5 * (logprobs - ref_logprobs) ** 2  # [B, T]


def kl_k3(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """k3 = exp(logp_ref - logp) - (logp_ref - logp) - 1. [B, T] x2 -> [B, T]."""
    _check(logprobs, ref_logprobs)
    log_r = (ref_logprobs - logprobs).clamp(-_K3_LOG_RATIO_LIMIT, _K3_LOG_RATIO_LIMIT)
    return torch.expm1(log_r) - log_r  # [B, T]; expm1 keeps precision near log_r = 0


KL_ESTIMATORS: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "k1": kl_k1, "k2": kl_k2, "k3": kl_k3,
}


def kl_reward_per_sequence(kl: Tensor, mask: Tensor, beta: float) -> Tensor:
    """beta * sum over valid tokens of kl, per sequence, detached. [B, T] x2 -> [B].

    Subtract from the outcome reward of each completion before computing advantages.
    """
    return beta * (kl.detach() * mask.to(kl.dtype)).sum(dim=1)  # [B]


def kl_reward_to_go(kl: Tensor, mask: Tensor, beta: float) -> Tensor:
    """beta * sum_{s >= t} kl_s over valid tokens, detached. [B, T] x2 -> [B, T] (0 on padding).

    The KL part of the undiscounted return from token t on, when the penalty is paid
    per token (Hu 2025, REINFORCE++, gamma = 1).
    """
    maskf = mask.to(kl.dtype)  # [B, T]
    penalty = beta * kl.detach() * maskf  # [B, T]
    to_go = penalty.flip(1).cumsum(1).flip(1)  # [B, T]: sum over s >= t
    return to_go * maskf  # [B, T]


def masked_whiten(values: Tensor, mask: Tensor, eps: float = 1e-6) -> Tensor:
    """(x - mean) / (std + eps) over the valid positions of the whole batch; 0 on padding.

    Any shape (mask broadcastable). Unbiased std; all-equal valid values give 0.
    """
    maskf = mask.to(values.dtype).expand_as(values)  # same shape as values
    count = maskf.sum()
    if count < 2:
        return torch.zeros_like(values)
    mean = (values * maskf).sum() / count
    var = (((values - mean) * maskf) ** 2).sum() / (count - 1)
    std = var.sqrt()
    if std == 0:
        return torch.zeros_like(values)
    return (values - mean) / (std + eps) * maskf
