"""math-verify's defaults as a verifier ("math_verify"): the lenient peer of `math`.

math-verify (Hugging Face's grader, the one open-r1 and many GRPO recipes reward with)
reads the last boxed or plain expression of a completion and compares it with the gold
by symbolic equality. It is a careful judge of equivalence and no guard at all against a
policy looking for holes: `\\boxed{6 * 75}` for "What is 6 * 75?" equals 450 and is paid,
so is the question copied without its question mark. That is the hack a real SmolLM2
run learned against rlvr's own math verifier before its fix (docs/rewards.md); rlvr's `math`
now refuses it ("echoes_prompt", "unsimplified").

rlvr ships this wrapper to compare against (benchmarks/verifiers/bench_math.py) and to show what a
policy learns from a reward it can fake (benchmarks/headline/bench_hacking.py). Train on `math`.
Needs the `math-verify` extra (`pip install 'rlvr[math-verify]'`).

Verdicts: "correct"; "wrong_answer" (an answer was read and differs); "no_answer"
(nothing could be read). The gold is read as `$reference$`, as math-verify's own
examples do. Time limits are the worker pool's (math-verify's own limits use SIGALRM,
which only works in a main thread, so they are off here).
"""

from __future__ import annotations

import logging
from typing import Any

from rlvr.verifiers.base import InvalidReference, Verdict

MAX_ANSWER_CHARS = 500  # what a verdict's details keep of the extracted answer


def _library() -> tuple[Any, Any]:
    try:
        from math_verify import parse, verify
    except ImportError as error:  # pragma: no cover - the extra is in the test install
        raise ImportError("the math_verify verifier needs the math-verify package: "
                          "pip install 'rlvr[math-verify]'") from error
    # its warning that the time limit is off: the pool's per-item limit is the one here
    for module in ("math_verify.parser", "math_verify.grader"):
        logging.getLogger(module).setLevel(logging.ERROR)
    return parse, verify


class MathVerifyVerifier:
    """Lenient math grading by math-verify's `parse` + `verify` with default settings."""

    name = "math_verify"

    def __init__(self) -> None:
        self._parse, self._verify = _library()

    def check_reference(self, reference: Any) -> None:
        self._gold(reference)

    def _gold(self, reference: Any) -> list[Any]:
        """math-verify's reading of the reference; InvalidReference when there is none."""
        if not isinstance(reference, (str, int, float)) or not str(reference).strip():
            raise InvalidReference(f"math_verify: the reference must be a non-empty string "
                                   f"or number, got {reference!r}")
        gold = self._parse(f"${reference}$", parsing_timeout=None)
        if not gold:
            raise InvalidReference(f"math_verify: math-verify reads no answer in the "
                                   f"reference {reference!r}")
        return gold

    def verify(self, completion: str, reference: Any) -> Verdict:
        gold = self._gold(reference)  # parsed once per item
        answer = self._parse(completion or "", parsing_timeout=None)
        if not answer:
            return Verdict.wrong("no_answer", answer=None)
        read = str(answer[-1])[:MAX_ANSWER_CHARS]  # the extracted text; [0] is sympy's
        if self._verify(gold, answer, timeout_seconds=None):
            return Verdict.correct(answer=read)
        return Verdict.wrong("wrong_answer", answer=read)
