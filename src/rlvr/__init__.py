"""rlvr: reinforcement learning with verifiable rewards.

Layers (imports point down only): cli -> config -> training -> rollout -> algorithms ->
verifiers -> data -> runs. `rlvr.verifiers` and `rlvr.algorithms` never import the
trainer or torch models, so they can be used alone (from TRL, verl, a notebook).
"""

__version__ = "0.1.0"
