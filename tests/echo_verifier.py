"""A verifier that copies the completion into its verdict, everywhere model text can
go (reason, a detail value, a detail key, a list): loaded as
"echo_verifier:EchoVerifier" by `rlvr verify` and `rlvr serve` in the untrusted-text
tests, so that whatever text a test sends comes back through every writer."""

from __future__ import annotations


class EchoVerifier:
    name = "echo"

    def check_reference(self, reference):
        return None

    def verify(self, completion, reference):
        from rlvr.verifiers.base import Verdict

        return Verdict(0.0, False, completion,
                       {"echo": completion, "keyed": {completion: [completion, 1]}})
