"""The math verifier: final-answer extraction, hedging checks, normalisation and exact
symbolic equivalence. See verifier.py for the pipeline and the verdict reasons."""

from rlvr.verifiers.math.verifier import MathVerifier

__all__ = ["MathVerifier"]
