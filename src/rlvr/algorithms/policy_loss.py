"""Clipped policy-gradient surrogates: PPO clip (token ratio) and GSPO (sequence ratio).

Call shape shared by every policy loss:

    out = loss_fn(logprobs, old_logprobs, advantages, mask)
        logprobs:     [B, T] log pi_theta(token) under the current policy (with grad)
        old_logprobs: [B, T] log pi_old(token) of the policy that sampled (no grad)
        advantages:   [B] (one per sequence) or [B, T] (per token)
        mask:         [B, T] 1 = completion token that counts, 0 = prompt/padding/masked
    out.loss:  [B, T] per-token loss (to be minimised), exactly 0 where mask == 0;
               reduce it with an aggregation (aggregation.py)
    out.stats: dict of 0-dim detached tensors, token-weighted means over the mask:
               ratio_mean, ratio_min, ratio_max, clip_frac_low, clip_frac_high,
               clip_frac, dual_clip_frac, approx_kl (k3 of pi_old vs pi_theta)

Each loss declares its statistics in `stat_reductions` (name -> how values from parts
of a batch combine: "mean" over valid tokens, weighted by their count, or "min"/"max"),
so a trainer knows every key before any row runs and can combine micro-batches exactly.

"Clipped" counts the tokens whose gradient the clip removes: ratio < 1 - eps_low with
A < 0 (low) and ratio > 1 + eps_high with A > 0 (high). Tokens with A == 0 count as
neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, ClassVar, Mapping, Protocol

import torch
from torch import Tensor


@dataclass(frozen=True)
class PolicyLossOutput:
    loss: Tensor  # [B, T]
    stats: dict[str, Tensor] = field(default_factory=dict)  # name -> 0-dim tensor


# The statistics of the clipped surrogates (clipped_surrogate + approx_kl).
CLIP_STATS: Mapping[str, str] = MappingProxyType({
    "clip_frac_low": "mean", "clip_frac_high": "mean", "clip_frac": "mean",
    "dual_clip_frac": "mean", "ratio_mean": "mean", "ratio_min": "min", "ratio_max": "max",
    "approx_kl": "mean"})


class PolicyLoss(Protocol):
    name: ClassVar[str]
    stat_reductions: ClassVar[Mapping[str, str]]  # every key of out.stats
    # Whether a row with advantage 0 gets gradient (loss_terms.rows_with_signal).
    touches_zero_advantage: ClassVar[bool]

    def __call__(self, logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor,
                 mask: Tensor) -> PolicyLossOutput:
        ...


def _check_clip(eps_low: float, eps_high: float, dual_clip: float | None) -> None:
    if not 0.0 <= eps_low < 1.0:
        raise ValueError(f"eps_low must be in [0, 1), got {eps_low}")
    if eps_high < 0.0:
        raise ValueError(f"eps_high must be >= 0, got {eps_high}")
    if dual_clip is not None and dual_clip <= 1.0:
        raise ValueError(f"dual_clip must be > 1 (Ye et al. 2020), got {dual_clip}")


def _check_inputs(logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor,
                  mask: Tensor) -> tuple[Tensor, Tensor]:
    """Validate shapes; return advantages as [B, T]-broadcastable and mask as float."""
    if logprobs.dim() != 2:
        raise ValueError(f"logprobs must be [B, T], got shape {tuple(logprobs.shape)}")
    if old_logprobs.shape != logprobs.shape or mask.shape != logprobs.shape:
        raise ValueError(f"logprobs {tuple(logprobs.shape)}, old_logprobs "
                         f"{tuple(old_logprobs.shape)} and mask {tuple(mask.shape)} "
                         "must have the same [B, T] shape")
    if advantages.dim() == 1 and advantages.shape[0] == logprobs.shape[0]:
        advantages = advantages[:, None]  # [B, 1]
    elif advantages.shape != logprobs.shape:
        raise ValueError(f"advantages must be [B] or [B, T] with B, T = "
                         f"{tuple(logprobs.shape)}, got shape {tuple(advantages.shape)}")
    return advantages.to(logprobs.dtype), mask.to(logprobs.dtype)


def _zero_masked(logprobs: Tensor, old_logprobs: Tensor,
                 maskf: Tensor) -> tuple[Tensor, Tensor]:
    """Put 0 at masked positions, so padding that holds -inf or garbage cannot turn the
    loss (or its gradient) into NaN through 0 * nan."""
    valid = maskf > 0  # [B, T]
    return (torch.where(valid, logprobs, torch.zeros_like(logprobs)),
            torch.where(valid, old_logprobs.detach(), torch.zeros_like(logprobs)))


def clipped_surrogate(ratio: Tensor, advantages: Tensor, mask: Tensor, eps_low: float,
                      eps_high: float, dual_clip: float | None) -> tuple[Tensor, dict]:
    """Per-token PPO loss -min(r A, clip(r, 1-eps_low, 1+eps_high) A), optionally dual-clipped.

    ratio [B, T], advantages [B, T] or [B, 1], mask [B, T] float. Decoupled
    eps_low/eps_high is DAPO's "clip-higher" (Yu et al. 2025): a larger eps_high lets
    low-probability tokens grow, which keeps entropy from collapsing. Dual clip (Ye et
    al. 2020, "Mastering Complex Control in MOBA Games"): for A < 0 the loss is capped
    at -c A, so a huge ratio on a bad token cannot blow the update up.
    """
    unclipped = -ratio * advantages  # [B, T]
    clipped = -ratio.clamp(1.0 - eps_low, 1.0 + eps_high) * advantages  # [B, T]
    loss = torch.maximum(unclipped, clipped)  # [B, T]
    negative = advantages < 0  # [B, T] or [B, 1]
    dual_active = torch.zeros_like(loss, dtype=torch.bool)  # [B, T]
    if dual_clip is not None:
        cap = -dual_clip * advantages  # [B, T] or [B, 1], > 0 where A < 0
        dual_active = negative & (loss > cap)  # [B, T]
        loss = torch.where(negative, torch.minimum(loss, cap), loss)  # [B, T]
    loss = loss * mask  # [B, T]

    with torch.no_grad():
        valid = mask > 0  # [B, T]
        low = valid & negative & (ratio < 1.0 - eps_low)  # [B, T]
        high = valid & (advantages > 0) & (ratio > 1.0 + eps_high)  # [B, T]
        stats = {
            "clip_frac_low": _masked_fraction(low, valid),
            "clip_frac_high": _masked_fraction(high, valid),
            "clip_frac": _masked_fraction(low | high, valid),
            "dual_clip_frac": _masked_fraction(dual_active & valid, valid),
            **_ratio_stats(ratio.detach(), valid),
        }
    return loss, stats


def _masked_fraction(flags: Tensor, valid: Tensor) -> Tensor:
    return flags.sum().float() / valid.sum().clamp(min=1).float()


def _ratio_stats(ratio: Tensor, valid: Tensor) -> dict[str, Tensor]:
    """Mean/min/max of the ratio over valid tokens (1.0 when none are valid)."""
    if not bool(valid.any()):
        one = torch.ones((), dtype=torch.float32, device=ratio.device)
        return {"ratio_mean": one, "ratio_min": one, "ratio_max": one}
    values = ratio[valid].float()  # [N]
    return {"ratio_mean": values.mean(), "ratio_min": values.min(),
            "ratio_max": values.max()}


def _approx_kl(logprobs: Tensor, old_logprobs: Tensor, valid: Tensor) -> Tensor:
    """k3 estimate of KL(pi_old || pi_theta) over valid tokens (samples come from pi_old)."""
    log_ratio = (logprobs - old_logprobs).detach().float()  # [B, T]
    k3 = torch.expm1(log_ratio) - log_ratio  # [B, T]
    return (k3 * valid).sum() / valid.sum().clamp(min=1)


@dataclass(frozen=True)
class PPOClip:
    """Token-level PPO clip (Schulman et al. 2017) with DAPO clip-higher and optional dual clip.

    ratio_t = exp(logprobs_t - old_logprobs_t). Defaults are symmetric PPO (0.2, 0.2);
    DAPO uses eps_low=0.2, eps_high=0.28.
    """

    name: ClassVar[str] = "ppo_clip"
    stat_reductions: ClassVar[Mapping[str, str]] = CLIP_STATS
    touches_zero_advantage: ClassVar[bool] = False  # -r A and its gradient are 0 at A = 0
    eps_low: float = 0.2
    eps_high: float = 0.2
    dual_clip: float | None = None  # c > 1; None = off

    def __post_init__(self) -> None:
        _check_clip(self.eps_low, self.eps_high, self.dual_clip)

    def __call__(self, logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor,
                 mask: Tensor) -> PolicyLossOutput:
        return _clipped_policy_loss(self, _token_log_ratio, logprobs, old_logprobs,
                                    advantages, mask)


def _token_log_ratio(logprobs: Tensor, old_logprobs: Tensor, mask: Tensor) -> Tensor:
    """PPO's per-token log-ratio log pi_theta - log pi_old. [B, T] x3 -> [B, T]"""
    return logprobs - old_logprobs  # [B, T]


def sequence_log_ratio(logprobs: Tensor, old_logprobs: Tensor, mask: Tensor) -> Tensor:
    """GSPO's length-normalised sequence log-ratio: mean over valid tokens of log pi/pi_old.

    [B, T] x3 -> [B]; a sequence with no valid tokens gets 0 (ratio 1).
    """
    log_ratio = (logprobs - old_logprobs) * mask  # [B, T]
    return log_ratio.sum(dim=1) / mask.sum(dim=1).clamp(min=1)  # [B]


@dataclass(frozen=True)
class GSPO:
    """Group Sequence Policy Optimization (Zheng et al. 2025): one importance ratio per sequence.

    s_i = exp(mean_t log(pi_theta / pi_old)), the geometric mean of the token ratios,
    clipped at sequence level (a whole sequence is in or out of the trust region). We
    use the paper's GSPO-token form: token t's ratio is sg[s_i] * pi(y_t) / sg[pi(y_t)],
    whose value is s_i for every token but whose gradient flows through the token's own
    log-prob. Summed with sequence-mean aggregation this is exactly GSPO's gradient
    (s_i A_i / |y_i| * grad log pi(y_t)), and it also accepts [B, T] advantages.
    The paper's clip range is tiny (eps_low=3e-4, eps_high=4e-4) because s_i is a
    per-token geometric mean; these are the defaults here.
    """

    name: ClassVar[str] = "gspo"
    stat_reductions: ClassVar[Mapping[str, str]] = CLIP_STATS
    touches_zero_advantage: ClassVar[bool] = False  # -s A and its gradient are 0 at A = 0
    eps_low: float = 3e-4
    eps_high: float = 4e-4
    dual_clip: float | None = None  # c > 1 applied to s_i; not in the paper, off by default

    def __post_init__(self) -> None:
        _check_clip(self.eps_low, self.eps_high, self.dual_clip)

    def __call__(self, logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor,
                 mask: Tensor) -> PolicyLossOutput:
        return _clipped_policy_loss(self, _gspo_token_log_ratio, logprobs, old_logprobs,
                                    advantages, mask)


def _gspo_token_log_ratio(logprobs: Tensor, old_logprobs: Tensor, mask: Tensor) -> Tensor:
    """log s_i on every token of sequence i, with gradient through the token's own
    log-prob only (GSPO-token: sg[log s_i] + logp_t - sg[logp_t]). [B, T] x3 -> [B, T]"""
    seq_log_ratio = sequence_log_ratio(logprobs, old_logprobs, mask)  # [B]
    return seq_log_ratio.detach()[:, None] + logprobs - logprobs.detach()  # [B, T]


def _clipped_policy_loss(clip: PPOClip | GSPO,
                         log_ratio_fn: Callable[[Tensor, Tensor, Tensor], Tensor],
                         logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor,
                         mask: Tensor) -> PolicyLossOutput:
    """What PPOClip and GSPO share: validate, compute the ratio their way, clip, report."""
    advantages, maskf = _check_inputs(logprobs, old_logprobs, advantages, mask)
    logprobs, old_logprobs = _zero_masked(logprobs, old_logprobs, maskf)  # [B, T] x2
    ratio = torch.exp(log_ratio_fn(logprobs, old_logprobs, maskf))  # [B, T]
    loss, stats = clipped_surrogate(ratio, advantages, maskf, clip.eps_low, clip.eps_high,
                                    clip.dual_clip)
    stats["approx_kl"] = _approx_kl(logprobs, old_logprobs, maskf)
    return PolicyLossOutput(loss=loss, stats=stats)


POLICY_LOSSES: dict[str, type] = {cls.name: cls for cls in (PPOClip, GSPO)}
