"""The math_verify verifier: math-verify's defaults behind rlvr's verifier contract, and
the hole that makes it the lenient peer in benchmarks/headline/bench_hacking.py."""

from __future__ import annotations

import pytest

pytest.importorskip("math_verify", reason="math-verify not installed (the math-verify extra)")

from rlvr.verifiers.base import InvalidReference, run_verifier  # noqa: E402
from rlvr.verifiers.math.verifier import MathVerifier  # noqa: E402
from rlvr.verifiers.pool import Case, VerifierPool  # noqa: E402
from rlvr.verifiers.registry import get_verifier  # noqa: E402

PROMPT = "What is 6 * 75?"


@pytest.mark.parametrize("completion, passed, reason, answer", [
    ("So the answer is \\boxed{450}.", True, "correct", "450"),
    ("\\boxed{451}", False, "wrong_answer", "451"),
    ("I am not sure.", False, "no_answer", None),
    ("", False, "no_answer", None),
    ("\\boxed{ANSWER}", False, "wrong_answer", "ANSWER"),  # the instruction's placeholder
])
def test_verdicts(completion, passed, reason, answer):
    verdict = get_verifier("math_verify").verify(completion, "450")
    assert (verdict.passed, verdict.reason, verdict.details["answer"]) == (passed, reason, answer)
    assert verdict.score == (1.0 if passed else 0.0)


@pytest.mark.parametrize("echo", ["\\boxed{6 * 75}", "\\boxed{75 \\times 6}",
                                  "Answer: 6*75"])
def test_the_question_echoed_is_paid_here_and_refused_by_math(echo):
    # the hole bench_hacking.py lets a policy find: an unevaluated expression equals the gold
    assert run_verifier(get_verifier("math_verify"), echo, "450", PROMPT).passed
    strict = run_verifier(MathVerifier(), echo, "450", PROMPT)
    assert not strict.passed and strict.reason in ("echoes_prompt", "unsimplified")


def test_a_reference_with_nothing_to_read_is_refused():
    with pytest.raises(InvalidReference, match="math_verify: the reference"):
        get_verifier("math_verify").check_reference("  ")


def test_runs_by_name_in_worker_processes():
    cases = [Case("math_verify", "\\boxed{6 * 75}", "450"), Case("math_verify", "7", "450"),
             Case("math", "\\boxed{450}", "450")]
    with VerifierPool(workers=1, preload=["math_verify"]) as pool:
        verdicts = pool.verify(cases)
    assert [v.passed for v in verdicts] == [True, False, True]
    assert verdicts[1].reason == "wrong_answer"


def test_the_audit_rechecks_its_passes_with_the_math_rules():
    from rlvr.audit.strict import strict_recheck

    assert strict_recheck("math_verify", "\\boxed{6 * 75}", "450", PROMPT).startswith(
        "echoes_prompt")
    assert strict_recheck("math_verify", "So \\boxed{450}.", "450", PROMPT) is None
