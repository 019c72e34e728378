"""Loss aggregation: per-token loss [B, T] + mask [B, T] -> one scalar to minimise.

Each aggregation is a small object with two methods:

    agg.weights(mask)   [B, T] -> [B, T] per-token weights w, so that loss = sum(w * loss)
    agg(loss, mask)     [B, T] x2 -> 0-dim tensor, sum(weights(mask) * loss)

`weights` exists for gradient accumulation: compute the weights once on the mask of the
whole (mini)batch that one optimizer step sees, slice them per micro-batch, and sum
`(w[idx] * loss_micro).sum()` over the micro-batches; the result equals aggregating the
whole batch at once, which per-micro-batch means would not (they would weight a
micro-batch of short sequences like one of long ones).

The choice matters because it decides how much each token counts:
- token_mean:    sum / (number of valid tokens in the batch) - every token counts the
                 same; DAPO (Yu et al. 2025) uses it so long answers are not down-weighted.
- sequence_mean: mean over each sequence's tokens, then mean over sequences - the
                 original GRPO (Shao et al. 2024); a token of a short answer weighs more.
- constant:      sum / (B * max_length) with a fixed max_length - Dr. GRPO (Liu et al.
                 2025); no dependence on the sampled lengths, hence no length bias.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol

from torch import Tensor


class LossAggregation(Protocol):
    name: ClassVar[str]

    def weights(self, mask: Tensor) -> Tensor:
        """[B, T] mask -> [B, T] per-token weights (0 where mask is 0)."""
        ...

    def __call__(self, loss: Tensor, mask: Tensor) -> Tensor:
        """[B, T] per-token loss and mask -> 0-dim tensor."""
        ...


def _check(loss: Tensor, mask: Tensor) -> None:
    if loss.dim() != 2 or loss.shape != mask.shape:
        raise ValueError(f"loss and mask must both be [B, T], got {tuple(loss.shape)} "
                         f"and {tuple(mask.shape)}")


def _float_mask(mask: Tensor) -> Tensor:
    if mask.dim() != 2:
        raise ValueError(f"mask must be [B, T], got shape {tuple(mask.shape)}")
    return mask.float() if not mask.is_floating_point() else mask


def weighted_sum(loss: Tensor, mask: Tensor, weights: Tensor) -> Tensor:
    """sum(weights * loss) over mask's tokens: [B, T] x3 -> 0-dim. With weights from an
    aggregation's `weights` on a larger batch, the rows given sum to their share of it."""
    _check(loss, mask)
    # masked_fill, not just a 0 weight: 0 * nan (e.g. a KL term at padding) is nan
    loss = loss.masked_fill(mask == 0, 0.0)  # [B, T]
    return (weights.to(loss.dtype) * loss).sum()


class _Weighted:
    """Shared __call__: sum(weights(mask) * loss). Aggregations only define weights."""

    def weights(self, mask: Tensor) -> Tensor:
        raise NotImplementedError

    def __call__(self, loss: Tensor, mask: Tensor) -> Tensor:
        _check(loss, mask)
        return weighted_sum(loss, mask, self.weights(mask))


@dataclass(frozen=True)
class TokenMean(_Weighted):
    """Every valid token weighs 1 / (valid tokens in the batch) (DAPO)."""

    name: ClassVar[str] = "token_mean"

    def weights(self, mask: Tensor) -> Tensor:
        mask = _float_mask(mask)  # [B, T]
        return mask / mask.sum().clamp(min=1.0)  # [B, T]


@dataclass(frozen=True)
class SequenceMean(_Weighted):
    """Token weight 1 / (its sequence's valid length * B) (original GRPO).

    Sequences with no valid tokens (e.g. masked as truncated) contribute 0 but still
    count in B, so masking an answer does not up-weight the others.
    """

    name: ClassVar[str] = "sequence_mean"

    def weights(self, mask: Tensor) -> Tensor:
        mask = _float_mask(mask)  # [B, T]
        lengths = mask.sum(dim=1, keepdim=True).clamp(min=1.0)  # [B, 1]
        return mask / (lengths * mask.shape[0])  # [B, T]


@dataclass(frozen=True)
class ConstantNormalizer(_Weighted):
    """Token weight 1 / (B * max_length) with a fixed max_length (Dr. GRPO).

    max_length is a constant of the run (typically the max new tokens of generation),
    not the longest sequence of the batch.
    """

    name: ClassVar[str] = "constant"
    max_length: int = 1024

    def __post_init__(self) -> None:
        if self.max_length < 1:
            raise ValueError(f"max_length must be >= 1, got {self.max_length}")

    def weights(self, mask: Tensor) -> Tensor:
        mask = _float_mask(mask)  # [B, T]
        return mask / (mask.shape[0] * self.max_length)  # [B, T]


def masked_mean(values: Tensor, mask: Tensor) -> Tensor:
    """Mean of `values` over positions where mask != 0 (0 when there are none).

    Any shape; values and mask must broadcast. Used for metrics (entropy, KL)."""
    maskf = mask.to(values.dtype) if values.is_floating_point() else mask.float()
    return (values * maskf).sum() / maskf.sum().clamp(min=1.0)


AGGREGATIONS: dict[str, type] = {
    cls.name: cls for cls in (TokenMean, SequenceMean, ConstantNormalizer)
}
