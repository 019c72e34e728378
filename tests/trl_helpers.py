"""A verifier with graded scores on any text, for tests that run a real trainer on an
untrained model (loaded by name, "trl_helpers:CharCoverage", in worker processes)."""

from __future__ import annotations


class CharCoverage:
    """score = the share of the reference's distinct characters the completion uses
    (an untrained model's random text earns different scores); details keep the text
    graded, so a test can see exactly what the verifier was given."""

    name = "char-coverage"

    def check_reference(self, reference):
        return None

    def verify(self, completion, reference):
        from rlvr.verifiers.base import Verdict

        wanted = set(str(reference))
        score = len(wanted & set(completion)) / len(wanted)
        return Verdict(score, score == 1.0, "coverage", {"text": completion})
