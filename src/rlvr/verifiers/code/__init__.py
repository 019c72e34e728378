"""The sandboxed code verifier ("code"). See verifier.py and docs/CODE_SANDBOX.md."""

from rlvr.verifiers.code.verifier import CodeVerifier

__all__ = ["CodeVerifier"]
