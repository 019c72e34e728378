"""The update's forward behind one seam: which way the completion logits are computed.

`resolve_update_path(update.path, model, RunShape)` picks one path for the run (plain,
packed, tree, two_pass, replay; see paths.py) and the trainer calls only
`path.logits(model, batch)`. The plain path is here (paths.py); the faster exact ones
are opt-in accelerators in rlvr.accel.update: shared_prefix.py (packed and two-pass
rows), tree_attention.py (attention over only the allowed pairs), replay.py and
replay_layers.py (the forward from the sampler's kept activations, a hand-written layer
backward). The newcomer's version of all of it is rlvr.training.reference_step.
"""

from rlvr.update_paths.paths import (PATHS, ReplayPath, RunShape, SharedPrefixPath,
                                     UpdatePath, resolve_update_path, why_not)

__all__ = ["PATHS", "ReplayPath", "RunShape", "SharedPrefixPath", "UpdatePath",
           "resolve_update_path", "why_not"]
