"""Pure tensor pieces of RLVR algorithms: advantages, policy losses, loss terms,
aggregation, KL, entropy, log-probs, dynamic sampling, overlong handling, sampler/trainer
mismatch and its importance-sampling corrections, the objective that composes them, and the Bradley-Terry preference loss
of reward models.

Imports nothing from training/rollout/cli and no models; usable alone (TRL, verl, a
notebook). Shape conventions: P prompts x G samples for rewards/advantages ([P, G]);
B sequences x T completion positions for per-token tensors ([B, T], B = P * G when a
generation batch is flattened prompt-major: row p * G + g is sample g of prompt p);
V vocabulary. mask [B, T]: 1 = completion token that counts in the loss.
"""

from rlvr.algorithms.advantages import (ADVANTAGES, GRPO, RLOO, AdvantageEstimator, DrGRPO,
                                        ReinforcePP, ReinforcePPBaseline)
from rlvr.algorithms.aggregation import (AGGREGATIONS, ConstantNormalizer, LossAggregation,
                                         SequenceMean, TokenMean, masked_mean,
                                         weighted_sum)
from rlvr.algorithms.dynamic_sampling import GroupAccumulator, nonconstant_groups
from rlvr.algorithms.entropy import token_entropy
from rlvr.algorithms.kl import (KL_ESTIMATORS, kl_k1, kl_k2, kl_k3, kl_reward_per_sequence,
                                kl_reward_to_go, masked_whiten)
from rlvr.algorithms.logprobs import token_logprobs
from rlvr.algorithms.loss_terms import EntropyBonus, KLPenalty, LossTerm, TermInputs
from rlvr.algorithms.objective import LossInputs, LossOutputs, Objective
from rlvr.algorithms.overlong import mask_truncated, soft_overlong_penalty
from rlvr.algorithms.preference import bradley_terry_loss, pairwise_accuracy
from rlvr.algorithms.cov_loss import KLCov, centred_covariance, top_covariance
from rlvr.algorithms.policy_loss import (GSPO, PolicyLoss, PolicyLossOutput, PPOClip,
                                         clipped_surrogate, sequence_log_ratio)
from rlvr.algorithms.rollout_correction import (ROLLOUT_CORRECTIONS, CorrectionOutput,
                                                MaskedIS, NoCorrection, RolloutCorrection,
                                                SequenceMaskedIS, SequenceTruncatedIS,
                                                TruncatedIS, mismatch_stats)
from rlvr.algorithms.row_logits import RowLogits, token_logprobs_and_entropy
from rlvr.algorithms.registry import (POLICY_LOSSES, advantage_estimator, kl_estimator,
                                      loss_aggregation, policy_loss, rollout_correction)

__all__ = [
    "ADVANTAGES", "AGGREGATIONS", "KL_ESTIMATORS", "POLICY_LOSSES", "ROLLOUT_CORRECTIONS",
    "AdvantageEstimator", "ConstantNormalizer", "CorrectionOutput", "DrGRPO", "EntropyBonus",
    "GRPO", "GSPO", "GroupAccumulator", "KLCov", "KLPenalty", "LossAggregation",
    "LossInputs", "LossOutputs", "LossTerm",
    "MaskedIS", "NoCorrection", "Objective", "PPOClip", "PolicyLoss", "PolicyLossOutput", "RLOO",
    "ReinforcePP", "ReinforcePPBaseline", "RolloutCorrection", "RowLogits",
    "SequenceMaskedIS", "SequenceMean", "SequenceTruncatedIS", "TermInputs", "TokenMean",
    "TruncatedIS",
    "advantage_estimator", "bradley_terry_loss", "centred_covariance", "clipped_surrogate",
    "kl_estimator",
    "kl_k1", "kl_k2", "kl_k3",
    "kl_reward_per_sequence", "kl_reward_to_go", "loss_aggregation", "mask_truncated",
    "masked_mean", "masked_whiten", "mismatch_stats", "nonconstant_groups", "pairwise_accuracy",
    "policy_loss",
    "rollout_correction", "sequence_log_ratio",
    "soft_overlong_penalty", "token_entropy", "top_covariance", "token_logprobs",
    "token_logprobs_and_entropy",
    "weighted_sum",
]
