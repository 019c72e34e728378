"""pi_old, the policy the update's ratio is taken against, and the rollout correction's
importance weights (rlvr.algorithms.rollout_correction) that go with it.

Three ways to get pi_old's log-probs [B, T]:
- the sampler's own, when its engine declares them the trainer's numbers and no
  correction is on (the synchronous hf engine: no extra work);
- a forward of the trainer's weights before the update (`old_policy`): the plain path,
  whenever the sampler's numbers are not the trainer's (vLLM) or were sampled by older
  weights (rollout.max_staleness >= 1, decoupled PPO's proximal policy);
- opt-in, `algorithm.old_logprobs_from_update`: with one optimizer step per batch the
  weights before the update are the weights the update's forward runs with, so pi_old
  is that forward's own log-probs, detached (`FromUpdateForward`): the same loss and
  gradient, one forward less per step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from rlvr.algorithms import mismatch_stats, token_logprobs_and_entropy
from rlvr.rollout.factory import declared_capabilities
from rlvr.training.batch import PackedBatch

if TYPE_CHECKING:
    from rlvr.training.loop import Trainer


def recomputes_pi_old(t: "Trainer") -> bool:
    """Whether the trainer's weights, not the sampler's numbers, give pi_old: a rollout
    correction is on, or the sampler's log-probs are not the trainer's numbers."""
    cfg = t.cfg
    # K >= 1: the producer's engine sampled (the trainer's own, hf, only evaluates)
    sampler = (t.engine.capabilities if t.producer is None
               else declared_capabilities(cfg.sampling.engine))
    return (_correcting(t.algo.correction)
            or sampler.recompute_old_logprobs(cfg.algorithm.recompute_old_logprobs))


def _correcting(correction: Any) -> bool:
    """Whether a rollout correction weighs the loss (`none` and no correction do not)."""
    return correction is not None and correction.active


def _measured(pi_old: torch.Tensor, behaviour: torch.Tensor, mask: torch.Tensor,
              correction: Any) -> tuple[torch.Tensor | None, dict[str, float]]:
    """The correction's token weights [B, T] (None without one) and the metrics of pi_old
    [B, T] against the sampler's log-probs [B, T] over `mask` [B, T]: mismatch/*, and
    correction/* with a correction."""
    metrics = mismatch_stats(pi_old, behaviour, mask)
    if not _correcting(correction):
        return None, metrics
    out = correction(pi_old, behaviour, mask)
    return out.weights, {**metrics, **out.stats}


def pi_old_source(t: "Trainer") -> str:
    """Where pi_old comes from, as the run records it (update/pi_old on every metrics
    line): "sampler", "forward" (a forward of its own) or "update_forward"."""
    if not recomputes_pi_old(t):
        return "sampler"
    return "update_forward" if t.cfg.algorithm.old_logprobs_from_update else "forward"


def old_policy(t: "Trainer", batch: PackedBatch, mask: torch.Tensor
               ) -> tuple[Any, torch.Tensor | None, dict[str, float]]:
    """pi_old [B, T] for the ratio, the rollout correction's token weights [B, T] (None
    when there is none) and the metrics of both.

    pi_old is the sampler's log-probs when the engine declares them the trainer's
    numbers (`recompute_old_logprobs` null) and no correction is on. Otherwise the
    trainer's forward recomputes it; the sampler's log-probs then still say which
    distribution drew the tokens: their distance from pi_old is logged (mismatch/*) and,
    with a correction, becomes importance weights on the policy loss (correction/*).
    With `algorithm.old_logprobs_from_update` that forward is the update's own: a
    `FromUpdateForward` stands in for pi_old, the weights come with it, and the metrics
    after the update (`FromUpdateForward.stats`)."""
    if not recomputes_pi_old(t):
        return batch.old_logprobs, None, {}
    if t.cfg.algorithm.old_logprobs_from_update:
        return FromUpdateForward.over(batch.old_logprobs, t.algo.correction), None, {}
    with torch.no_grad():
        old_logprobs, _ = token_logprobs_and_entropy(t.update.logits(t.model, batch),
                                                     batch.completion_ids,
                                                     t.cfg.sampling.temperature)  # [B, T]
    weights, metrics = _measured(old_logprobs, batch.old_logprobs, mask, t.algo.correction)
    return old_logprobs, weights, metrics


@dataclass
class _Filled:
    """What the update's forwards measured, shared by every view of one batch."""

    proximal: torch.Tensor  # [B, T] pi_old where `ran`, the sampler's elsewhere
    ran: torch.Tensor       # [B] bool: rows whose forward ran


@dataclass
class FromUpdateForward:
    """pi_old read off the update's own forward. Indexing it with rows (as the update
    indexes pi_old for its minibatches and micro-batches) gives the view of those rows;
    `resolve` turns a view into pi_old and the correction's weights once the forward of
    its rows has run. Valid only when the update takes one optimizer step per batch
    (config: epochs 1, minibatches 1), so that every forward runs the weights pi_old
    names."""

    behaviour: torch.Tensor  # [B, T] the sampler's log-probs
    rows: torch.Tensor       # [b] the batch's rows this view covers
    correction: Any          # RolloutCorrection or None
    filled: _Filled

    @classmethod
    def over(cls, behaviour: torch.Tensor, correction: Any) -> "FromUpdateForward":
        rows = torch.arange(behaviour.shape[0], device=behaviour.device)
        ran = torch.zeros(behaviour.shape[0], dtype=torch.bool, device=behaviour.device)
        return cls(behaviour, rows, correction, _Filled(behaviour.clone(), ran))

    def __getitem__(self, index: torch.Tensor) -> "FromUpdateForward":
        return FromUpdateForward(self.behaviour, self.rows[index], self.correction, self.filled)

    def resolve(self, logprobs: torch.Tensor, mask: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """pi_old [b, T] (the forward's log-probs [b, T], detached) and the correction's
        weights [b, T] (None without one) for this view's rows; records them for
        `stats`. mask [b, T]."""
        old = logprobs.detach()
        self.filled.proximal[self.rows] = old
        self.filled.ran[self.rows] = True
        if not _correcting(self.correction):
            return old, None
        return old, self.correction(old, self.behaviour[self.rows], mask).weights

    def stats(self, mask: torch.Tensor) -> dict[str, float]:
        """mismatch/* and correction/* over the rows whose forward ran (mask [B, T]):
        the rows without a gradient (skip_zero_advantage) are never measured."""
        measured = mask * self.filled.ran[:, None]  # [B, T]
        return _measured(self.filled.proximal, self.behaviour, measured, self.correction)[1]


# What the update takes as pi_old: log-probs [B, T], or the view that its forwards resolve
PiOld = torch.Tensor | FromUpdateForward
