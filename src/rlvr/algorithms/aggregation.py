"""Loss aggregation: per-token loss [B, T] + mask [B, T] -> one scalar to minimise.

Each aggregation is a small object with three methods:

    agg.normalizer(mask)         [B, T] -> 0-dim: the batch's denominator
    agg.weights(mask, norm=None) [B, T] -> [B, T] per-token weights w, so that
                                 loss = sum(w * loss); `norm` defaults to normalizer(mask)
    agg(loss, mask)              [B, T] x2 -> 0-dim tensor, sum(weights(mask) * loss)

The normaliser is explicit for gradient accumulation: it depends on the whole batch that
one optimizer step sees (its token count, its row count), and it is additive, so the
whole batch's value is the sum over any split of its rows (micro-batches, ranks: an
all-reduce of one number). Compute it once on the whole batch (or sum it over the
parts), pass it to `weights` of each part's rows, and sum `sum(w * loss_part)` over the
parts: the result equals aggregating the whole batch at once, which per-part means
would not (they would weight a part of short sequences like one of long ones).

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

import torch
from torch import Tensor


class LossAggregation(Protocol):
    name: ClassVar[str]

    def normalizer(self, mask: Tensor) -> Tensor:
        """[B, T] mask -> 0-dim float denominator, additive over a split of the rows."""
        ...

    def weights(self, mask: Tensor, normalizer: Tensor | None = None) -> Tensor:
        """[B, T] mask -> [B, T] per-token weights (0 where mask is 0), for these rows
        as part of a batch whose normaliser is `normalizer` (default: their own)."""
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


def _rows(mask: Tensor) -> Tensor:
    """B as a 0-dim float tensor on the mask's device."""
    mask = _float_mask(mask)
    return torch.tensor(float(mask.shape[0]), dtype=mask.dtype, device=mask.device)


class _Weighted:
    """Shared __call__: sum(weights(mask) * loss). Aggregations define normalizer and
    _weights (per-token weights given the normaliser)."""

    def normalizer(self, mask: Tensor) -> Tensor:
        raise NotImplementedError

    def _weights(self, mask: Tensor, normalizer: Tensor) -> Tensor:
        raise NotImplementedError

    def weights(self, mask: Tensor, normalizer: Tensor | None = None) -> Tensor:
        mask = _float_mask(mask)  # [B, T]
        return self._weights(mask, self.normalizer(mask) if normalizer is None
                             else normalizer)  # [B, T]

    def __call__(self, loss: Tensor, mask: Tensor) -> Tensor:
        _check(loss, mask)
        return weighted_sum(loss, mask, self.weights(mask))


@dataclass(frozen=True)
class TokenMean(_Weighted):
    """Every valid token weighs 1 / (valid tokens in the batch) (DAPO)."""

    name: ClassVar[str] = "token_mean"

    def normalizer(self, mask: Tensor) -> Tensor:
        return _float_mask(mask).sum()  # valid tokens

    def _weights(self, mask: Tensor, normalizer: Tensor) -> Tensor:
        return mask / normalizer.clamp(min=1.0)  # [B, T]


@dataclass(frozen=True)
class SequenceMean(_Weighted):
    """Token weight 1 / (its sequence's valid length * B) (original GRPO).

    Sequences with no valid tokens (e.g. masked as truncated) contribute 0 but still
    count in B, so masking an answer does not up-weight the others.
    """

    name: ClassVar[str] = "sequence_mean"

    def normalizer(self, mask: Tensor) -> Tensor:
        return _rows(mask)  # B: every sequence counts, even a fully masked one

    def _weights(self, mask: Tensor, normalizer: Tensor) -> Tensor:
        lengths = mask.sum(dim=1, keepdim=True).clamp(min=1.0)  # [B, 1]
        return mask / (lengths * normalizer)  # [B, T]


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

    def normalizer(self, mask: Tensor) -> Tensor:
        return _rows(mask) * self.max_length  # B * max_length

    def _weights(self, mask: Tensor, normalizer: Tensor) -> Tensor:
        return mask / normalizer  # [B, T]


def masked_mean(values: Tensor, mask: Tensor) -> Tensor:
    """Mean of `values` over positions where mask != 0 (0 when there are none).

    Any shape; values and mask must broadcast. Used for metrics (entropy, KL)."""
    maskf = mask.to(values.dtype) if values.is_floating_point() else mask.float()
    return (values * maskf).sum() / maskf.sum().clamp(min=1.0)


AGGREGATIONS: dict[str, type] = {
    cls.name: cls for cls in (TokenMean, SequenceMean, ConstantNormalizer)
}
