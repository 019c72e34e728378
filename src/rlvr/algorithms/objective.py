"""The update's objective in one place: `Objective(LossInputs) -> LossOutputs`.

    loss = sum_{i,t} w_it * c_it * surrogate_it            (the policy term, coefficient 1)
         + sum over further terms k of coef_k * sum_{i,t} w_it * term_k,it

- surrogate_it: the policy loss's per-token value (policy_loss.py: PPO's clipped
  surrogate, Schulman et al. 2017; GSPO's sequence-ratio variant, Zheng et al. 2025).
- c_it: importance weights correcting the sampler/trainer mismatch (rollout_correction.py:
  truncated IS, Yao et al. 2025); 1 when there is nothing to correct.
- w_it: the aggregation's token weights (aggregation.py: token mean as in DAPO, Yu et al.
  2025; sequence mean as in GRPO, Shao et al. 2024; constant as in Dr. GRPO, Liu et al.
  2025), computed on the whole optimizer batch so micro-batches sum to the batch's loss.
- the further terms (loss_terms.py): GRPO's KL penalty, an entropy bonus.

The trainer (rlvr.training.loop) computes the log-probs and entropy by whichever update
path it runs, hands them here, and calls `backward` on `LossOutputs.loss`. A new loss is a
new policy loss or loss term class with its options (registry.py); this module composes
them and reports the statistics the loop logs. Pure tensor functions: no model, no config.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from torch import Tensor

from rlvr.algorithms.aggregation import masked_mean, weighted_sum
from rlvr.algorithms.loss_terms import LossTerm, TermInputs


@dataclass(frozen=True)
class LossInputs:
    """One (micro-)batch of B rows x T completion positions."""

    logprobs: Tensor        # [B, T] log pi_theta(token), with grad
    entropy: Tensor         # [B, T] H(pi_theta) at each position, with grad
    old_logprobs: Tensor    # [B, T] log pi_old(token) of the policy that sampled
    advantages: Tensor      # [B] (per sequence) or [B, T] (per token)
    mask: Tensor            # [B, T] 1 = completion token that counts in the loss
    weights: Tensor         # [B, T] the aggregation's token weights (w above)
    ref_logprobs: Tensor | None = None  # [B, T] log pi_ref(token); None: no reference
    is_weights: Tensor | None = None    # [B, T] importance weights (c above); None: all 1


@dataclass(frozen=True)
class LossOutputs:
    loss: Tensor              # 0-dim, differentiable: what the trainer calls backward on
    stats: dict[str, float]   # the policy loss's statistics + policy_loss, kl, entropy


@dataclass(frozen=True)
class Objective:
    """policy_loss: a rlvr.algorithms.policy_loss.PolicyLoss; terms: further loss terms
    (rlvr.algorithms.loss_terms), each aggregated with the same token weights; kl: the
    per-token KL estimator reported as the `kl` statistic when a reference is given."""

    policy_loss: Any
    terms: Sequence[LossTerm] = ()
    kl: Callable[[Tensor, Tensor], Tensor] | None = None

    def __call__(self, x: LossInputs) -> LossOutputs:
        out = self.policy_loss(x.logprobs, x.old_logprobs, x.advantages.to(x.logprobs.dtype),
                               x.mask)
        per_token = out.loss if x.is_weights is None else out.loss * x.is_weights  # [B, T]
        loss = weighted_sum(per_token, x.mask, x.weights)  # 0-dim
        stats = {name: float(value) for name, value in out.stats.items()}
        stats["policy_loss"] = float(loss.detach())
        inputs = TermInputs(x.logprobs, x.entropy, x.mask, x.ref_logprobs)
        for term in self.terms:  # every term aggregated with the same token weights
            loss = loss + term.coef * weighted_sum(term.per_token(inputs), x.mask, x.weights)
        if x.ref_logprobs is not None and self.kl is not None:
            stats["kl"] = float(masked_mean(self.kl(x.logprobs.detach(), x.ref_logprobs),
                                            x.mask))
        stats["entropy"] = float(masked_mean(x.entropy.detach(), x.mask))
        stats["loss"] = float(loss.detach())
        return LossOutputs(loss, stats)
