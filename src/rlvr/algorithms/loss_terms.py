"""The update's loss as a sum of terms, and which rows the terms need.

    loss = sum over terms of  term.coef * aggregate(term.per_token(inputs), mask)

The policy surrogate (policy_loss.py, coefficient 1) is one term; the others are here:
GRPO's KL penalty in the loss (Shao et al. 2024: + beta * k3 per token, Schulman's
estimator, kl.py) and an entropy bonus (- coef * H per token; e.g. Schulman et al. 2017,
eq. 9). Every term is aggregated with the same token weights, so a minibatch split into
micro-batches sums to the same loss (aggregation.py).

Each term declares `touches_zero_advantage`: whether it gives gradient to a row whose
advantage is 0. The clipped surrogates do not (their loss is -r A, exactly 0 with zero
gradient at A = 0); a KL or entropy term does (it acts on every token). When no term in
use touches such rows, `rows_with_signal` drops them and the update runs forward and
backward on the rest only: the same gradient for less work. A new term states its own
answer, and the row skipping follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Iterable, Protocol

import torch
from torch import Tensor

from rlvr.algorithms.kl import KL_ESTIMATORS


@dataclass(frozen=True)
class TermInputs:
    """What a term may read; every tensor [B, T], logprobs and entropy with grad."""

    logprobs: Tensor
    entropy: Tensor
    mask: Tensor
    ref_logprobs: Tensor | None = None


class LossTerm(Protocol):
    name: ClassVar[str]
    touches_zero_advantage: ClassVar[bool]

    @property
    def coef(self) -> float:
        """Multiplies the aggregated per-token values (a bonus is negative)."""
        ...

    def per_token(self, inputs: TermInputs) -> Tensor:
        """[B, T] values to aggregate (any value at masked positions)."""
        ...


@dataclass(frozen=True)
class KLPenalty:
    """+ beta * k(logp, logp_ref) per token: KL(pi_theta || pi_ref) in the loss (GRPO)."""

    name: ClassVar[str] = "kl"
    touches_zero_advantage: ClassVar[bool] = True
    beta: float
    estimator: str = "k3"

    def __post_init__(self) -> None:
        if self.estimator not in KL_ESTIMATORS:
            raise ValueError(f"unknown KL estimator {self.estimator!r}; known: "
                             f"{', '.join(sorted(KL_ESTIMATORS))}")

    @property
    def coef(self) -> float:
        return self.beta

    def per_token(self, inputs: TermInputs) -> Tensor:
        if inputs.ref_logprobs is None:
            raise ValueError("the KL term needs ref_logprobs")
        return KL_ESTIMATORS[self.estimator](inputs.logprobs, inputs.ref_logprobs)  # [B, T]


@dataclass(frozen=True)
class EntropyBonus:
    """- coef * H per token: keeps the policy from collapsing onto one answer early."""

    name: ClassVar[str] = "entropy"
    touches_zero_advantage: ClassVar[bool] = True
    weight: float

    @property
    def coef(self) -> float:
        return -self.weight

    def per_token(self, inputs: TermInputs) -> Tensor:
        return inputs.entropy  # [B, T]


def rows_with_signal(terms: Iterable[object], mask: Tensor, advantages: Tensor) -> Tensor:
    """Indices [B'] of the rows whose loss can have a gradient: every row when any term
    declares `touches_zero_advantage`, else rows with a nonzero advantage and at least
    one unmasked token. mask [B, T], advantages [B]."""
    everything = torch.arange(mask.shape[0], device=mask.device)  # [B]
    if any(getattr(term, "touches_zero_advantage") for term in terms):
        return everything
    return everything[(advantages != 0) & (mask.sum(1) > 0)]  # [B']
