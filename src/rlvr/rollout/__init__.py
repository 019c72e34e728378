"""Generation engines behind one protocol (`RolloutEngine`)."""

from rlvr.rollout.base import Completion, RolloutEngine, SamplingParams

__all__ = ["Completion", "RolloutEngine", "SamplingParams"]
