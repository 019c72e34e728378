"""Generation engines behind one protocol (`RolloutEngine`)."""

from rlvr.rollout.base import (Completion, EngineCapabilities, KeptActivations, RolloutEngine,
                               SamplingParams)

__all__ = ["Completion", "EngineCapabilities", "KeptActivations", "RolloutEngine",
           "SamplingParams"]
