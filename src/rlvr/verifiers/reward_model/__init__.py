"""The `reward_model` verifier: a Bradley-Terry reward model (a Hugging Face
sequence-classification head, trained by `rlvr rm-train`) scores completions in
batches. See verifier.py for where the model runs and the options."""

from rlvr.verifiers.reward_model.verifier import RewardModelVerifier

__all__ = ["RewardModelVerifier"]
