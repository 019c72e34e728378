"""Raw reward -> verdict score in [0, 1] (the Verdict contract), by the chosen
normalisation. Pure functions; the statistics come from `rlvr rm-train`'s JSON.

  sigmoid   sigmoid(raw): the Bradley-Terry probability that the completion beats one
            whose reward is 0. The default: needs no statistics.
  standard  z = (raw - mean) / std over the training set's rewards (chosen and rejected
            completions, saved by rm-train), reported as Phi(z), the normal CDF: the
            completion's percentile among the training completions under a normal fit.
  none      the raw reward, clipped into [0, 1] (details say when it was clipped): only
            meaningful for a model whose rewards already lie in [0, 1].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NORMALISATIONS = ("sigmoid", "standard", "none")


@dataclass(frozen=True)
class RewardStats:
    """Mean and standard deviation of the raw rewards on the training set."""

    mean: float
    std: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mean) and math.isfinite(self.std)) or self.std <= 0:
            raise ValueError(f"reward statistics need a finite mean and a std > 0, got "
                             f"mean={self.mean!r} std={self.std!r}")


def sigmoid(x: float) -> float:
    # the two branches keep exp() from overflowing for large |x|
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def normalise(raw: float, how: str, stats: RewardStats | None = None) -> tuple[float, dict]:
    """(score in [0, 1], details) for one raw reward. details: the normalised value
    ("normalised": sigmoid(raw), z, or raw) and, for `none`, whether it was clipped."""
    if how == "sigmoid":
        value = sigmoid(raw)
        return value, {"normalised": value}
    if how == "standard":
        if stats is None:
            raise ValueError("normalization 'standard' needs the training set's reward "
                             "statistics (saved by rlvr rm-train)")
        z = (raw - stats.mean) / stats.std
        return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0))), {"normalised": z}
    if how == "none":
        score = min(1.0, max(0.0, raw))
        return score, {"normalised": raw, "clipped": score != raw}
    raise ValueError(f"normalization must be one of {', '.join(NORMALISATIONS)}, got {how!r}")
