"""Reward programs: the checkers whose verdicts become RL rewards.

Usable alone, e.g. from another trainer:

    from rlvr.verifiers import VerifierPool, Case
    with VerifierPool() as pool:
        verdicts = pool.verify([Case("math", completion, "\\frac12")])

`get_verifier(name).verify(...)` runs a check in the current process; use it only on
trusted text. Model text goes through `VerifierPool`, which enforces the time limit.
"""

from rlvr.verifiers.base import InvalidReference, Verdict, Verifier
from rlvr.verifiers.pool import Case, VerifierPool, verify_batch
from rlvr.verifiers.registry import available, get_verifier, register, spec_for

__all__ = [
    "Case", "InvalidReference", "Verdict", "Verifier", "VerifierPool", "available",
    "get_verifier", "register", "spec_for", "verify_batch",
]
