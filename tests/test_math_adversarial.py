"""Completions that try to win without the answer, and inputs that try to hang or run
code: all must score 0, each for its own reason, well inside the time limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvr.verifiers import Case, InvalidReference, VerifierPool
from rlvr.verifiers.math.verifier import MathVerifier

V = MathVerifier()


@pytest.mark.parametrize("completion,reference,hedge", [
    (r"$\boxed{2}$ or $\boxed{3}$", "2", "several_answers"),
    ("$\\boxed{3}$\n$\\boxed{2}$", "2", "several_answers"),
    (r"\boxed{2 \text{ or } 3}", "3", "alternative"),
    (r"\boxed{2 \text{ or } 3}", "2", "alternative"),
    (r"\boxed{either 2 or 3}", "2", "alternative"),
    (r"The answer is not $\boxed{5}$.", "5", "negated"),
    (r"The answer isn't \boxed{5}", "5", "negated"),
    (r"The answer cannot be $\boxed{5}$", "5", "negated"),
    (r"so x is never equal to \boxed{5}", "5", "negated"),
    (r"The answer is \boxed{\neq 5}", "5", "negated"),
    ("The final answer is not 5.", "5", "negated"),
    (" ".join(rf"\boxed{{{k}}}." + " Hmm, let me reconsider." for k in range(1, 9)) + r" \boxed{7}",
     "7", "spamming"),
    (r"\boxed{1, 2, 3, 4, 5, 6, 7}", "4", "several_values"),
    (r"\boxed{\{4, 5\}}", "4", "several_values"),
    (r"\boxed{\pm 4}", "4", "several_values"),
])
def test_hedges_score_zero(completion, reference, hedge):
    verdict = V.verify(completion, reference)
    assert (verdict.score, verdict.reason, verdict.details["hedge"]) == (0.0, "hedged", hedge)


@pytest.mark.parametrize("completion", [r"\boxed{}", r"\boxed{ }", r"\boxed{5} then \boxed{}",
                                        r"\fbox{}", "no answer here, just 5", ""])
def test_empty_or_missing_answer_is_no_answer(completion):
    verdict = V.verify(completion, "5")
    assert (verdict.score, verdict.reason) == (0.0, "no_answer")


def test_last_number_fallback_is_opt_in():
    text = "so she has 5 apples left"
    assert V.verify(text, "5").reason == "no_answer"
    assert MathVerifier(fallback="last_number").verify(text, "5").passed
    assert not MathVerifier(fallback="last_number").verify(text, "6").passed
    with pytest.raises(ValueError, match="fallback"):
        MathVerifier(fallback="first_number")


def test_correction_that_ends_on_one_answer_is_fine():
    text = r"I got 3. Wait — I dropped a sign; the answer is \boxed{2}"
    assert V.verify(text, "2").passed
    assert V.verify(text, "3").reason == "wrong_answer"


@pytest.mark.parametrize("reference", [None, "", "   ", {"answer": "5"}, ["5"], True,
                                       "\\boxed{}", "$ $", float("nan")])
def test_invalid_reference(reference):
    with pytest.raises(InvalidReference, match="math: reference"):
        V.check_reference(reference)
    with pytest.raises(InvalidReference):
        V.verify(r"\boxed{5}", reference)


HUGE = [r"9^{9^{9^9}}", r"10^{10^{10}}", r"((10!)!)!", r"(10^{10})!", r"2^{2^{2^{2^{2^{2}}}}}",
        r"\frac{1}{9^{9^{9^9}}}", r"(9^{9^9})^{9^9}", r"\sqrt{2}^{10^{12}}", r"\binom{10^{9}}{10^{5}}",
        "9" * 5000 + "^{" + "9" * 5000 + "}", r"(x+1)^{10000}", r"x^{10^{10}}", r"10^{100}!",
        r"\prod_{k=1}^{10^{6}} k", r"\sum_{k=1}^{10^{10}} k", r"\int_0^{1} x^{10^{9}} dx",
        r"\lfloor 10^{10^{10}} \rfloor", r"2^{2^{20}} - 2^{2^{20}}", r"\sin^{10^{10}}(x)"]


def test_huge_expressions_end_quickly_with_zero():
    """Decided by the verifier itself (not the pool's kill): no verdict is a timeout,
    even with a 4 s limit on a shared 2-core machine. `answer_form: equivalent`, so that
    every tower reaches the parser (with a value gold the form check stops them first,
    see test_huge_expressions_are_not_values)."""
    equivalent = {"answer_form": "equivalent"}
    cases = [Case("math", rf"\boxed{{{h}}}", "7", equivalent, timeout_s=4.0) for h in HUGE]
    cases.append(Case("math", r"\boxed{10^{10^{10}}}", r"10^{10^{10}}", equivalent, timeout_s=4.0))
    with VerifierPool(workers=2, preload=["math"]) as pool:
        pool.start()  # imports (sympy, the grammar) are not part of any item's time
        verdicts = pool.verify(cases)
    for case, verdict in zip(cases[:-1], verdicts):
        assert verdict.score == 0.0 and verdict.reason in ("too_large", "wrong_answer",
                                                            "unparseable"), (case, verdict)
    assert verdicts[-1].passed  # the same tower written the same way: decided structurally


def test_huge_expressions_are_not_values():
    """With a value gold (the default form) a tower is an unevaluated expression: it
    scores 0 before any parsing."""
    for tower in HUGE[:9]:
        assert V.verify(rf"\boxed{{{tower}}}", "7").reason == "unsimplified", tower


SLOW_TO_PARSE = ["(" * 40 + "1" + ")" * 40, "{" * 40 + "1" + "}" * 40, "x+" * 140 + "1",
                 "-" * 290 + "1", "x y " * 70, "1+" * 2000 + "1"]


def test_inputs_slow_to_parse_end_within_the_limit():
    cases = [Case("math", rf"\boxed{{{text}}}", "2", {"answer_form": "equivalent"}, timeout_s=4.5)
             for text in SLOW_TO_PARSE]
    with VerifierPool(workers=2, preload=["math"]) as pool:
        pool.start()
        verdicts = pool.verify(cases)
    for case, verdict in zip(cases, verdicts):
        assert verdict.score == 0.0 and verdict.reason in ("unparseable", "too_slow",
                                                            "wrong_answer"), (case, verdict)


def test_huge_completions_end_within_the_limit():
    """Inputs that would be quadratic in a naive extractor: thousands of nested boxes,
    markers, boxes. Each is decided by the verifier (not the pool's kill)."""
    cases = [
        Case("math", "\\boxed{" * 20000 + "1" + "}" * 20000, "1", timeout_s=4.5),
        Case("math", "Answer: " * 20000, "1", timeout_s=4.5),
        Case("math", "\\boxed{" * 20000, "1", timeout_s=4.5),
        Case("math", " ".join(f"\\boxed{{{k}}}" for k in range(5000)), "4999", timeout_s=4.5),
        Case("math", "x" * 500_000 + " #### 1", "1", timeout_s=4.5),
        Case("math", "\\boxed{" + "1 aa " * 20000 + "}", "1", timeout_s=4.5),
    ]
    with VerifierPool(workers=2, preload=["math"]) as pool:
        pool.start()
        verdicts = pool.verify(cases)
    assert [(v.passed, v.reason) for v in verdicts] == [
        (True, "correct"), (False, "no_answer"), (False, "no_answer"), (False, "hedged"),
        (True, "correct"), (False, "unparseable")]


def test_time_budget_stops_a_slow_check():
    slow = MathVerifier(time_budget_s=0.01, answer_form="equivalent")  # so it is parsed
    verdict = slow.verify(r"\boxed{" + "x+" * 140 + "1}", "1")
    assert (verdict.reason, verdict.details["limit_s"]) == ("too_slow", 0.01)
    assert MathVerifier(time_budget_s=0.01).verify(r"\boxed{1}", "1").passed  # fast path


def test_model_text_is_never_executed(tmp_path: Path):
    marker = tmp_path / "pwned"
    payloads = [f"__import__('os').system('touch {marker}')",
                f"exec(\"open('{marker}', 'w')\")", f"eval('open(\\'{marker}\\', \\'w\\')')"]
    for payload in payloads:
        for completion in (rf"\boxed{{{payload}}}", f"#### {payload}", f"Answer: {payload}"):
            assert not V.verify(completion, "0").passed
    assert not marker.exists()


def test_details_name_the_extracted_answer():
    verdict = V.verify(r"Thus $\boxed{\dfrac{1}{2}}$.", "0.5")
    assert verdict.passed and verdict.details["answer"] == r"\dfrac{1}{2}"
    assert verdict.details["method"] == "boxed"
