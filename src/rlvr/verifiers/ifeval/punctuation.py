"""IFEval "punctuation:no_comma"."""

from __future__ import annotations

from rlvr.verifiers.ifeval.registry import instruction


@instruction("punctuation:no_comma", "no comma anywhere")
def no_comma(response: str) -> bool:
    return "," not in response
