"""The `reward_model` verifier: a learned Bradley-Terry reward model (trained by
`rlvr rm-train`) scores the completion; no reference is needed.

Where the model runs (the model is heavy, the checks cheap to batch):
- Trainer: `rlvr train reward.verifier=reward_model` does not send these items to the
  verifier worker processes. rlvr.training.rewards.LocalScoring scores them in the
  trainer's own process, on the policy's device, in batches (`verify_batch`): one copy
  of the model, one forward per batch. The registry marks this verifier `in_process`.
- `rlvr verify` and anything else that goes through a VerifierPool: every worker
  process loads the model once, on first use (lazily, then cached with the verifier
  instance), on `device` (cpu by default). Use few workers: each holds a copy.

Options: model (the rm-train output dir; required), normalization (sigmoid | standard |
none, see normalise.py), pass_threshold (a score at or above it passes; 0.5),
max_length (tokens read; longer texts lose their start), batch_size, device,
prompt_style ("" = the style rm-train recorded).
Verdict: score = the normalised reward, passed = score >= pass_threshold, reason
"scored", details {raw, normalised, normalization}.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from rlvr.verifiers.base import Verdict
from rlvr.verifiers.reward_model.normalise import NORMALISATIONS, RewardStats, normalise
from rlvr.verifiers.reward_model.scoring import STYLES, read_meta

REASON_SCORED = "scored"


@dataclass(frozen=True)
class RewardModelOptions:
    model: str
    normalization: str = "sigmoid"
    pass_threshold: float = 0.5
    max_length: int = 512
    batch_size: int = 16
    device: str = "cpu"
    prompt_style: str = ""


def parse_options(**options: Any) -> RewardModelOptions:
    """The options, checked (ValueError naming the option); reads only the model dir's
    small JSON, never the weights."""
    if not options.get("model"):
        raise ValueError("reward_model: option 'model' (the rm-train output dir) is required")
    try:
        opts = RewardModelOptions(**options)
    except TypeError as exc:
        known = ", ".join(RewardModelOptions.__dataclass_fields__)
        raise ValueError(f"reward_model: {exc} (options: {known})") from None
    if not (Path(opts.model) / "config.json").is_file():
        raise ValueError(f"reward_model: option 'model': {opts.model} is not a model dir "
                         "(no config.json); train one with `rlvr rm-train`")
    if opts.normalization not in NORMALISATIONS:
        raise ValueError(f"reward_model: option 'normalization' must be one of "
                         f"{', '.join(NORMALISATIONS)}, got {opts.normalization!r}")
    if opts.normalization == "standard":
        stats_of(opts.model)  # fails now when rm-train's statistics are missing
    if not 0.0 <= float(opts.pass_threshold) <= 1.0:
        raise ValueError("reward_model: option 'pass_threshold' must be in [0, 1]")
    if opts.max_length < 1 or opts.batch_size < 1:
        raise ValueError("reward_model: options 'max_length' and 'batch_size' must be >= 1")
    if opts.prompt_style and opts.prompt_style not in STYLES:
        raise ValueError(f"reward_model: option 'prompt_style' must be one of "
                         f"{', '.join(STYLES)}")
    return opts


def stats_of(directory: str) -> RewardStats:
    """The training-set reward statistics rm-train saved with the model."""
    stats = read_meta(directory).get("stats")
    if not isinstance(stats, dict) or "mean" not in stats or "std" not in stats:
        raise ValueError(f"reward_model: normalization 'standard' needs the reward "
                         f"statistics rm-train saves ({directory} has none)")
    return RewardStats(float(stats["mean"]), float(stats["std"]))


class RewardModelVerifier:
    name = "reward_model"
    uses_prompt = True  # the reward model reads the task with the answer

    def __init__(self, **options: Any) -> None:
        self.options = parse_options(**options)
        self.stats = stats_of(self.options.model) \
            if self.options.normalization == "standard" else None
        self._scorer: Any = None  # loaded on first use: see the module docstring

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        parse_options(**options)

    def check_reference(self, reference: Any) -> None:
        """Any reference (or none) will do: the reward model does not read it."""

    def scorer(self) -> Any:
        if self._scorer is None:
            from rlvr.verifiers.reward_model.scoring import RewardScorer

            o = self.options
            self._scorer = RewardScorer(o.model, o.device, o.max_length, o.batch_size,
                                        o.prompt_style)
        return self._scorer

    def verify(self, completion: str, reference: Any = None,
               prompt: str | None = None) -> Verdict:
        return self.verify_batch([completion], [prompt])[0]

    def verify_batch(self, completions: Sequence[str],
                     prompts: Sequence[str | None]) -> list[Verdict]:
        """One verdict per completion, all scored in batches of `batch_size`."""
        raws = self.scorer().score([p or "" for p in prompts], list(completions))
        return [self._verdict(raw) for raw in raws]

    def _verdict(self, raw: float) -> Verdict:
        if not math.isfinite(raw):  # a broken model, not a bad answer: never a silent 0
            return Verdict.error(f"reward_model: the model returned {raw!r}")
        how = self.options.normalization
        score, extra = normalise(raw, how, self.stats)
        return Verdict(score, score >= float(self.options.pass_threshold), REASON_SCORED,
                       {"raw": raw, "normalization": how, **extra})
