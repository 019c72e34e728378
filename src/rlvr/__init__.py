"""rlvr: reinforcement learning with verifiable rewards.

Layers, top to bottom (a package imports only packages to its right; the full rules are
in docs/ARCHITECTURE.md and tests/test_import_layers.py checks every module):

    cli > training > evaluation > environments > episodes > update_paths > rollout >
    accel > data > models > adapters > view > audit > serve > algorithms > distributed >
    verifiers > runs > config > textsafe > mathtext > errors

Two modules are reached from below: `accel` sees `rollout.base` (the engine protocol)
and `serve` sees `rollout.http_json`. `rlvr.verifiers` and `rlvr.algorithms` never
import the trainer or torch models, so they can be used alone (from TRL, verl, a
notebook).
"""

__version__ = "0.1.0"
