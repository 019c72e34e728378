"""Sampler/trainer mismatch: how far the rollout engine's log-probs are from the trainer's,
and importance-sampling weights that correct the policy gradient for it.

An inference engine (vLLM) samples with other kernels, other precision and other
batching than the trainer's forward, so the distribution that drew the tokens,
pi_sampler, is not the trainer's pi_old even with the same weights: the update is
"off-policy by accident" (Yao et al. 2025, "Your Efficient RL Framework Secretly Brings
You Off-Policy RL Training"). The trainer recomputes pi_old with its own forward for the
PPO ratio; the tokens still came from pi_sampler, so the unbiased gradient weighs each
token by the importance ratio

    rho_t = pi_old(y_t) / pi_sampler(y_t) = exp(trainer_logprobs_t - sampler_logprobs_t)

which is unbounded; the corrections here bound it (a little bias for much less
variance), as verl's rollout correction and TRL's `vllm_importance_sampling_correction`
do:

    tis      truncated IS (Yao et al. 2025):   w_t = min(rho_t, threshold)
    mis      masked IS:                        w_t = 1 if lower <= rho_t <= upper else 0
    seq_tis  sequence-level tis on s_i:        w_t = min(s_i, threshold)
    seq_mis  sequence-level mis on s_i:        w_t = 1 if lower <= s_i <= upper else 0
    none     no correction:                    no weights (the loss is left as it is)

with s_i = exp(mean over sequence i's valid tokens of log rho_t), the geometric mean of
its token ratios (length-normalised, as GSPO's sequence ratio; verl's sequence mode uses
the product instead). tis keeps every token but caps its weight; mis drops the tokens
(seq_mis: the whole sequences) on which the two engines disagree too much, rather than
trusting them at a capped weight.

Call shape shared by every correction:

    out = correction(trainer_logprobs, sampler_logprobs, mask)
        trainer_logprobs: [B, T] log pi_old(token) from the trainer's forward
        sampler_logprobs: [B, T] log pi_sampler(token) as the engine reported it
        mask:             [B, T] 1 = completion token that counts
    out.weights: [B, T] detached, 0 where mask == 0; multiply the per-token policy loss
                 by it before aggregation (the aggregation's normaliser is unchanged:
                 a masked token counts as a token with zero loss). None for `none`.
    out.stats:   {"correction/clipped_frac": fraction of valid tokens whose weight is
                 not their ratio (truncated by tis, zeroed by mis; sequence modes
                 count every valid token of an affected sequence),
                 "correction/weight_mean": mean weight over valid tokens}
                 (an empty mask gives 0 and 1). Empty for `none`.

`mismatch_stats` measures the disagreement itself (log it whenever pi_old is
recomputed, whether or not a correction is on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import torch
from torch import Tensor

from rlvr.algorithms.kl import kl_k3

MISMATCH_KEYS = ("mismatch/kl", "mismatch/abs_dlogprob", "mismatch/ratio_min",
                 "mismatch/ratio_mean", "mismatch/ratio_max")
CORRECTION_KEYS = ("correction/clipped_frac", "correction/weight_mean")


def _check(trainer_logprobs: Tensor, sampler_logprobs: Tensor, mask: Tensor) -> Tensor:
    """Validate the shapes; return the boolean [B, T] of valid tokens."""
    if trainer_logprobs.dim() != 2:
        raise ValueError("trainer_logprobs must be [B, T], got shape "
                         f"{tuple(trainer_logprobs.shape)}")
    if sampler_logprobs.shape != trainer_logprobs.shape or mask.shape != trainer_logprobs.shape:
        raise ValueError(f"trainer_logprobs {tuple(trainer_logprobs.shape)}, sampler_logprobs "
                         f"{tuple(sampler_logprobs.shape)} and mask {tuple(mask.shape)} must "
                         "have the same [B, T] shape")
    return mask > 0


def _log_ratio(trainer_logprobs: Tensor, sampler_logprobs: Tensor, valid: Tensor) -> Tensor:
    """log rho = trainer - sampler, detached, in float32; 0 where not valid (so padding
    holding garbage or -inf cannot produce NaN). [B, T] x3 -> [B, T]"""
    diff = (trainer_logprobs.detach().float() - sampler_logprobs.detach().float())  # [B, T]
    return torch.where(valid, diff, torch.zeros_like(diff))


def mismatch_stats(trainer_logprobs: Tensor, sampler_logprobs: Tensor,
                   mask: Tensor) -> dict[str, float]:
    """How far the sampler's log-probs are from the trainer's, over the valid tokens.

        mismatch/kl:           mean k3 estimate of KL(pi_sampler || pi_trainer), the
                               tokens being samples of pi_sampler: rho - 1 - log rho
                               (Schulman 2020; >= 0, unbiased)
        mismatch/abs_dlogprob: mean |trainer - sampler| log-prob
        mismatch/ratio_min, mismatch/ratio_mean, mismatch/ratio_max:
                               of rho = pi_trainer / pi_sampler = exp(trainer - sampler)

    [B, T] x3 -> dict of floats (one device sync). An all-zero mask measures nothing
    and gives the values of agreeing engines: kl and abs_dlogprob 0, ratios 1.
    """
    valid = _check(trainer_logprobs, sampler_logprobs, mask)
    if not bool(valid.any()):
        return dict(zip(MISMATCH_KEYS, (0.0, 0.0, 1.0, 1.0, 1.0)))
    log_ratio = _log_ratio(trainer_logprobs, sampler_logprobs, valid)[valid]  # [N]
    ratio = log_ratio.exp()  # [N]
    # kl_k3(logprobs, ref) = exp(ref - logprobs) - (ref - logprobs) - 1: here the
    # "policy" is the sampler and the "reference" the trainer; it clamps |log rho| at 20.
    k3 = kl_k3(torch.zeros_like(log_ratio), log_ratio)  # [N]
    values = torch.stack([k3.mean(), log_ratio.abs().mean(), ratio.min(), ratio.mean(),
                          ratio.max()])
    return dict(zip(MISMATCH_KEYS, values.tolist()))


@dataclass(frozen=True)
class CorrectionOutput:
    weights: Tensor | None  # [B, T] detached; None = no correction
    stats: dict[str, float] = field(default_factory=dict)


class RolloutCorrection(Protocol):
    name: ClassVar[str]
    active: ClassVar[bool]  # False only for `none`: no weights, the loss untouched

    def __call__(self, trainer_logprobs: Tensor, sampler_logprobs: Tensor,
                 mask: Tensor) -> CorrectionOutput:
        ...


def _check_threshold(threshold: float) -> None:
    if not threshold > 0:
        raise ValueError(f"threshold must be > 0, got {threshold}")


def _check_bounds(lower: float, upper: float) -> None:
    if not 0 <= lower < upper:
        raise ValueError(f"need 0 <= lower < upper, got lower={lower}, upper={upper}")


def _sequence_ratio(log_ratio: Tensor, valid: Tensor) -> Tensor:
    """s_i on every token of sequence i: exp of the mean log rho over its valid tokens
    (1 for a sequence without any). [B, T] x2 -> [B, T]"""
    validf = valid.float()  # [B, T]
    mean = (log_ratio * validf).sum(1) / validf.sum(1).clamp(min=1)  # [B]
    return mean.exp()[:, None].expand_as(log_ratio)  # [B, T]


def _output(weights: Tensor, changed: Tensor, valid: Tensor) -> CorrectionOutput:
    """Weights zeroed off the mask, and the statistics over valid tokens. [B, T] x3"""
    weights = torch.where(valid, weights, torch.zeros_like(weights))  # [B, T]
    count = valid.sum()
    if not bool(count):
        return CorrectionOutput(weights, dict(zip(CORRECTION_KEYS, (0.0, 1.0))))
    values = torch.stack([(changed & valid).sum() / count, weights.sum() / count])
    return CorrectionOutput(weights, dict(zip(CORRECTION_KEYS, values.tolist())))


def _ratio(trainer_logprobs: Tensor, sampler_logprobs: Tensor, mask: Tensor,
           sequence: bool) -> tuple[Tensor, Tensor]:
    """(rho [B, T] per token, or s_i on each token of sequence i; valid [B, T] bool)."""
    valid = _check(trainer_logprobs, sampler_logprobs, mask)
    log_ratio = _log_ratio(trainer_logprobs, sampler_logprobs, valid)  # [B, T]
    ratio = _sequence_ratio(log_ratio, valid) if sequence else log_ratio.exp()  # [B, T]
    return ratio, valid


def _truncated(ratio: Tensor, valid: Tensor, threshold: float) -> CorrectionOutput:
    return _output(ratio.clamp(max=threshold), ratio > threshold, valid)


def _masked(ratio: Tensor, valid: Tensor, lower: float, upper: float) -> CorrectionOutput:
    inside = (ratio >= lower) & (ratio <= upper)  # [B, T]
    return _output(inside.float(), ~inside, valid)


@dataclass(frozen=True)
class NoCorrection:
    """The sampler's tokens are trained on as if pi_old had drawn them."""

    name: ClassVar[str] = "none"
    active: ClassVar[bool] = False

    def __call__(self, trainer_logprobs: Tensor, sampler_logprobs: Tensor,
                 mask: Tensor) -> CorrectionOutput:
        return CorrectionOutput(None)


@dataclass(frozen=True)
class TruncatedIS:
    """Token-level truncated importance sampling (Yao et al. 2025): w_t = min(rho_t, C)."""

    name: ClassVar[str] = "tis"
    active: ClassVar[bool] = True
    threshold: float = 2.0  # C > 0

    def __post_init__(self) -> None:
        _check_threshold(self.threshold)

    def __call__(self, trainer_logprobs: Tensor, sampler_logprobs: Tensor,
                 mask: Tensor) -> CorrectionOutput:
        return _truncated(*_ratio(trainer_logprobs, sampler_logprobs, mask, False),
                          self.threshold)


@dataclass(frozen=True)
class MaskedIS:
    """Token-level masked importance sampling: tokens whose rho_t is outside [lower, upper]
    get weight 0, the others 1 (no reweighting)."""

    name: ClassVar[str] = "mis"
    active: ClassVar[bool] = True
    lower: float = 0.5
    upper: float = 2.0

    def __post_init__(self) -> None:
        _check_bounds(self.lower, self.upper)

    def __call__(self, trainer_logprobs: Tensor, sampler_logprobs: Tensor,
                 mask: Tensor) -> CorrectionOutput:
        return _masked(*_ratio(trainer_logprobs, sampler_logprobs, mask, False),
                       self.lower, self.upper)


@dataclass(frozen=True)
class SequenceTruncatedIS:
    """tis on the sequence's geometric-mean ratio s_i: every token of i weighs min(s_i, C)."""

    name: ClassVar[str] = "seq_tis"
    active: ClassVar[bool] = True
    threshold: float = 2.0

    def __post_init__(self) -> None:
        _check_threshold(self.threshold)

    def __call__(self, trainer_logprobs: Tensor, sampler_logprobs: Tensor,
                 mask: Tensor) -> CorrectionOutput:
        return _truncated(*_ratio(trainer_logprobs, sampler_logprobs, mask, True),
                          self.threshold)


@dataclass(frozen=True)
class SequenceMaskedIS:
    """mis on s_i: a sequence whose geometric-mean ratio is outside [lower, upper] is
    dropped whole (every token weight 0), the others keep weight 1."""

    name: ClassVar[str] = "seq_mis"
    active: ClassVar[bool] = True
    lower: float = 0.5
    upper: float = 2.0

    def __post_init__(self) -> None:
        _check_bounds(self.lower, self.upper)

    def __call__(self, trainer_logprobs: Tensor, sampler_logprobs: Tensor,
                 mask: Tensor) -> CorrectionOutput:
        return _masked(*_ratio(trainer_logprobs, sampler_logprobs, mask, True),
                       self.lower, self.upper)


ROLLOUT_CORRECTIONS: dict[str, type] = {
    cls.name: cls for cls in (NoCorrection, TruncatedIS, MaskedIS, SequenceTruncatedIS,
                              SequenceMaskedIS)}
