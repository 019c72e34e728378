"""The `algorithm` section of the trainer's config: the advantage estimator, the policy
loss and its further terms, the update's epochs and minibatches, pi_old and the rollout
correction. Part of TrainConfig (rlvr.training.config), in its own module to keep that
file readable; its components are built (and so checked) at load
(rlvr.training.algorithm)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from rlvr.config import ConfigError, Named
from rlvr.training.config_fields import _doc


def _named(name: str, help_text: str):
    return field(default_factory=lambda: Named(name), metadata={"help": help_text})


@dataclass
class AlgorithmConfig:
    # Components with options of their own: a bare name (its defaults) or a mapping,
    # e.g. policy_loss: {name: ppo_clip, eps_high: 0.28}. Built (and so checked) on load.
    advantage: Named = _named("grpo", "advantage estimator: grpo | dr_grpo | rloo | "
                              "reinforce_pp | reinforce_pp_baseline; options e.g. {name: "
                              "grpo, eps: 1e-6}")
    policy_loss: Named = _named("ppo_clip", "ppo_clip (token ratio; eps_low 0.2, eps_high "
                                "0.2 (DAPO clip-higher: 0.28), dual_clip null) | gspo "
                                "(sequence ratio; eps_low 3e-4, eps_high 4e-4) | kl_cov "
                                "(Cui et al. 2025: unclipped, a KL penalty on the top "
                                "`ratio` tokens by logp-advantage covariance; ratio 2e-3, "
                                "beta 1); options e.g. {name: ppo_clip, eps_high: 0.28}")
    aggregation: Named = _named("token_mean", "token_mean | sequence_mean | constant "
                                "(max_length: sampling.max_new_tokens unless given)")
    kl_beta: float = _doc("KL(policy || reference) coefficient; 0 = no reference model",
                          default=0.0)
    kl_estimator: str = _doc("per-token KL estimator", choices=("k1", "k2", "k3"), default="k3")
    kl_in: Literal["loss", "reward"] = _doc("add the KL penalty to the loss or subtract "
                                            "it from the reward", default="loss")
    entropy_coef: float = _doc("entropy bonus weight (0 = off)", default=0.0)
    epochs: int = _doc("policy epochs over each generation batch", default=1)
    minibatches: int = _doc("optimizer steps per epoch (the batch is split evenly)",
                            default=1)
    micro_batch_rows: int = _doc("gradient accumulation: forward/backward at most this "
                                 "many rows of a minibatch at a time (0 = all at once); "
                                 "same gradient and statistics, less memory", default=0)
    micro_batch_tokens: int = _doc("gradient accumulation: at most this many tokens "
                                   "(prompt + completion, per row) per forward/backward "
                                   "(0 = no limit; a longer row goes alone)", default=0)
    dynamic_sampling: bool = _doc("DAPO: drop groups with equal rewards, draw more until "
                                  "the batch is full", default=False)
    max_draws: int = _doc("dynamic sampling: generation rounds per step at most", default=3)
    recompute_old_logprobs: bool | None = _doc(
        "recompute old log-probs with a forward pass instead of using the sampler's; "
        "null = only when the engine's log-probs are not the trainer's numbers "
        "(rlvr.rollout.base.EngineCapabilities) or a rollout_correction other than none "
        "is set. Whenever recomputed, mismatch/* metrics compare the two", default=None)
    rollout_correction: Named = _named(
        "auto", "importance-sampling correction for a sampler whose log-probs are not the "
        "trainer's (rlvr.algorithms.rollout_correction): none | tis (truncated IS, weight "
        "min(rho, threshold); threshold 2.0) | mis (masked IS, weight 1 when lower <= rho "
        "<= upper else 0; lower 0.5, upper 2.0) | seq_tis, seq_mis (the same on the "
        "sequence's geometric-mean ratio); rho = pi_old / pi_sampler per token; auto = "
        "none when the engine's log-probs are the trainer's, else {name: tis, threshold: "
        "2.0}. A correction other than none recomputes pi_old; e.g. {name: mis, upper: "
        "1.5}")
    old_logprobs_from_update: bool = _doc(
        "opt-in: when pi_old is recomputed (a rollout correction, a sampler whose log-probs "
        "are not the trainer's, rollout.max_staleness >= 1), take it from the update's own "
        "forward, detached, instead of a forward before the update. With one optimizer "
        "step per batch (epochs 1, minibatches 1) the two are the same weights: same loss "
        "and gradient, one forward less per step; mismatch/* and correction/* then cover "
        "the rows the update ran (rlvr.training.old_policy)", default=False)
    skip_zero_advantage: bool = _doc("run the update's forward/backward only on rows whose "
                                     "loss can have a gradient (nonzero advantage; all "
                                     "rows when a loss term declares it touches rows with "
                                     "zero advantage: KL in the loss, entropy bonus): same "
                                     "gradient, less work when groups have equal rewards",
                                     default=True)

    def validate(self) -> None:
        if self.kl_beta < 0:
            raise ConfigError("must be >= 0", "kl_beta")
        if self.epochs < 1 or self.minibatches < 1:
            raise ConfigError("epochs and minibatches must be >= 1", "epochs")
        self._check_old_logprobs_from_update()
        for name in ("micro_batch_rows", "micro_batch_tokens"):
            if getattr(self, name) < 0:
                raise ConfigError("must be >= 0 (0 = no limit)", name)
        # Names and options of every component, before any model is built. The
        # generation limit lives in another section: 1 stands in for it here.
        from rlvr.training.algorithm import build_algorithm
        build_algorithm(self, max_length=1)

    def _check_old_logprobs_from_update(self) -> None:
        """The update's forward runs pi_old's weights only before its first optimizer
        step, and the KL-in-reward penalty needs pi_old before the update runs at all."""
        if not self.old_logprobs_from_update:
            return
        why = {"epochs": self.epochs > 1, "minibatches": self.minibatches > 1}
        for name, refused in why.items():
            if refused:
                raise ConfigError(f"old_logprobs_from_update needs one optimizer step per "
                                  f"batch (epochs 1, minibatches 1): after the first, the "
                                  f"update's weights are no longer pi_old's; got {name} "
                                  f"{getattr(self, name)}", name)
        if self.kl_beta > 0 and self.kl_in == "reward":
            raise ConfigError("old_logprobs_from_update cannot run with kl_in: reward (the "
                              "KL reward needs pi_old before the update's forward)", "kl_in")
        if self.recompute_old_logprobs is False:
            raise ConfigError("old_logprobs_from_update replaces the recompute of pi_old, "
                              "which recompute_old_logprobs false turns off",
                              "old_logprobs_from_update")
