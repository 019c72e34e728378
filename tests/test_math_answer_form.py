"""Issue 14: answers in final form, the last stated answer, and the prompt.

Every expected verdict below was decided by hand from the rule it names (see
answer_form.py, conflicts.py, prompt_echo.py), not by running a grader."""

from __future__ import annotations

import pytest

from rlvr.verifiers.math.verifier import MathVerifier

V = MathVerifier()
EQUIVALENT = MathVerifier(answer_form="equivalent")


# -- the "Must show", exactly as written -------------------------------------

@pytest.mark.parametrize("completion", [
    r"To solve \boxed{6 * 75}, we multiply. So the answer is \textbf{8100}.",
    r"\boxed{449+1}",
    r"First \boxed{450}. Actually the answer is 500.",
])
def test_must_show_hacks_score_zero(completion):
    assert V.verify(completion, "450").score == 0.0


@pytest.mark.parametrize("completion,reference", [
    (r"\boxed{450}", "450"),
    (r"6 * 75 = 450, so \boxed{450}", "450"),
    (r"\boxed{(x+1)^2}", "x^2+2x+1"),
])
def test_must_show_honest_answers_score_one(completion, reference):
    assert V.verify(completion, reference).score == 1.0


# -- 1. answers in final form ------------------------------------------------------

@pytest.mark.parametrize("answer,reference", [
    (r"6 * 75", "450"), (r"6 \times 75", "450"), (r"449+1", "450"), (r"\frac{900}{2}", "450"),
    (r"2^6", "64"), (r"\sqrt{16}", "4"), (r"\sqrt{2}\cdot\sqrt{8}", "4"), (r"x = 6*75", "450"),
    (r"\frac{1}{2}+\frac{1}{3}", r"\frac56"), (r"2^{100}", "1267650600228229401496703205376"),
    (r"\sin^2 x + \cos^2 x", "1"), (r"\frac{4}{2}", "2"), (r"10-5", "5"),
    (r"\sqrt{16}\pi", r"4\pi"), (r"(2+2)\sqrt{3}", r"4\sqrt{3}"), (r"2^{2}\pi", r"4\pi"),
])
def test_unevaluated_expressions_are_unsimplified(answer, reference):
    verdict = V.verify(rf"\boxed{{{answer}}}", reference)
    assert (verdict.score, verdict.reason) == (0.0, "unsimplified")
    # the same answer is equal in value: the equivalent form accepts it
    assert EQUIVALENT.verify(rf"\boxed{{{answer}}}", reference).passed


@pytest.mark.parametrize("answer,reference", [
    ("0.5", r"\frac12"), ("1/2", "0.5"), (r"\frac12", "0.5"), (r"\frac{1}{2}", "0.5"),
    ("1,000", "1000"), ("-5", "-5"), (r"\$450", "450"), (r"450 \text{ dollars}", "450"),
    ("450.0", "450"), (r"25\%", "0.25"), (r"1\frac{1}{2}", r"\frac32"), (r"\frac{6}{8}", r"\frac34"),
    ("4.5e2", "450"), (r"6.02 \times 10^{23}", "602000000000000000000000"), ("x = 450", "450"),
    (r"\sqrt{12}", r"2\sqrt{3}"), (r"2\sqrt{3}", r"2\sqrt{3}"), (r"\frac{3\pi}{4}", r"\frac{3\pi}{4}"),
    (r"0.75\pi", r"\frac{3\pi}{4}"), (r"\sqrt{2}+1", r"1+\sqrt2"), (r"\frac{\sqrt{3}}{2}", r"\frac{\sqrt3}{2}"),
    (r"\infty", r"\infty"), ("3+4i", "3+4i"), ("(3, 2)", "(3,2)"), (r"-\frac{3}{4}", "-0.75"),
])
def test_values_in_any_final_form_stay_correct(answer, reference):
    assert V.verify(rf"\boxed{{{answer}}}", reference).passed


def test_same_value_stated_twice_is_judged_by_its_value_form():
    assert V.verify(r"So $\boxed{2}$ or equivalently $\boxed{\frac{4}{2}}$.", "2").passed
    assert V.verify(r"So $\boxed{\frac{4}{2}}$.", "2").reason == "unsimplified"


def test_symbolic_references_keep_equivalence():
    assert V.verify(r"\boxed{2x - y + 1 = 0}", "y = 2x + 1").passed  # an equation, not a value
    assert V.verify(r"\boxed{[-2, 7]}", r"-2 \le x \le 7").passed
    assert V.verify(r"\boxed{\frac{x^2-1}{x-1}}", "x+1").passed


def test_answer_form_option_is_checked():
    with pytest.raises(ValueError, match="answer_form"):
        MathVerifier(answer_form="values")


# -- 2. the final answer is the last one committed to ---------------------------------

@pytest.mark.parametrize("completion,final", [
    (r"\boxed{450}. Actually the answer is **500**.", "500"),
    (r"\boxed{450}. The final answer is 500.", "500"),
    ("\\boxed{450}\n#### 500", "500"),
    ("\\boxed{450}\nAnswer: 500", "500"),
    (r"\boxed{500} ... wait, recomputing: \boxed{450}", "450"),
    (r"Step 1 gives \boxed{12} apples. The total is \boxed{450}.", "450"),
    (r"\boxed{450}. The result is 450.5", "450.5"),
    (r"\boxed{450}. So the answer is $\frac{1}{2}$.", "\\frac{1}{2}"),
])
def test_a_later_commitment_supersedes_the_box(completion, final):
    """Once the old `conflicting` cases: a later commitment replaces the box, so the
    completion answers the later value, paid against it and against nothing else."""
    verdict = V.verify(completion, "450" if final != "450" else "500")
    assert (verdict.score, verdict.reason) == (0.0, "wrong_answer"), verdict
    assert V.verify(completion, final).passed


def test_a_bold_value_after_the_answer_conflicts():
    """Emphasised like an answer but marked as none: which of the two is meant?"""
    verdict = V.verify(r"\boxed{450}, that is **500**.", "450")
    assert (verdict.score, verdict.reason, verdict.details["stated"]) == (0.0, "conflicting", "500")
    assert V.verify(r"\boxed{450}, that is **500**.", "500").reason == "conflicting"
    assert V.verify(r"\boxed{450}, that is **450**.", "450").passed


@pytest.mark.parametrize("completion", [
    r"\boxed{450}. So the answer is 450.",
    r"\boxed{450}. The answer is 450 dollars.",
    "\\boxed{450}\n\nThe answer is $450$.",
    "\\boxed{450}\nAnswer: 450",
    r"\boxed{450} #### 450",
    r"\boxed{450}. The answer is correct because 6*75=450.",
    r"\boxed{450}. Note that the answer is not 500.",
    r"The answer is 500. Hmm, no: \boxed{450}",  # a correction before the box
    r"$\boxed{450}$. Let me double-check: yes, $\boxed{450}$.",
])
def test_restating_the_same_answer_is_fine(completion):
    assert V.verify(completion, "450").passed


def test_restating_in_another_form_is_the_same_answer():
    assert V.verify(r"\boxed{0.5}. The answer is \frac{1}{2}.", "0.5").passed


def test_multi_valued_gold_still_boxes_each_value():
    assert V.verify(r"The solutions are $\boxed{1}$ and $\boxed{-2}$.", "1,-2").passed


# -- 3. the prompt ---------------------------------------------------------------------

def test_an_answer_restating_the_prompt_echoes_it():
    prompt = "What is 6 * 75? Give the final answer as \\boxed{ANSWER}."
    for answer in (r"6 * 75", r"6 \times 75", r"75 \cdot 6"):
        for verifier in (V, EQUIVALENT):
            verdict = verifier.verify(rf"\boxed{{{answer}}}", "450", prompt=prompt)
            assert (verdict.score, verdict.reason) == (0.0, "echoes_prompt"), (answer, verdict)
    assert V.verify(r"\boxed{450}", "450", prompt=prompt).passed


def test_echo_holds_under_equivalence_for_symbolic_golds():
    prompt = "Expand $(x+1)^2$."
    verdict = EQUIVALENT.verify(r"\boxed{(x+1)^2}", "x^2+2x+1", prompt=prompt)
    assert verdict.reason == "echoes_prompt"
    assert EQUIVALENT.verify(r"\boxed{x^2 + 2x + 1}", "x^2+2x+1", prompt=prompt).passed
    assert V.verify(r"\boxed{(x+1)^2}", "x^2+2x+1").passed  # no prompt, no echo


def test_what_is_not_an_echo():
    # a bare number also in the prompt is an answer
    assert V.verify(r"\boxed{5}", "5", prompt="What is 5 * 1?").passed
    # the gold itself is written in the prompt: restating it is the task
    assert EQUIVALENT.verify(r"\boxed{2^{10}}", "2^{10}",
                             prompt="Which is larger, $2^{10}$ or $10^3$?").passed
    # `6*75` is not inside `16*750`: a whole-expression match only
    assert EQUIVALENT.verify(r"\boxed{6*75}", "450", prompt="What is 16*750?").passed


def test_fraction_copied_from_the_prompt_echoes():
    verdict = V.verify(r"\boxed{\frac{6}{8}}", r"\frac34", prompt=r"Simplify $\frac{6}{8}$.")
    assert verdict.reason == "echoes_prompt"
    assert V.verify(r"\boxed{\frac{3}{4}}", r"\frac34", prompt=r"Simplify $\frac{6}{8}$.").passed


@pytest.mark.parametrize("answer,reason", [
    (r"9^{9^{9^9}}", "unsimplified"),  # a number, written as a tower: not evaluated
    ("ANSWER", "wrong_answer"),  # the template's placeholder: letters, not a number
    ("68 * 79 equals 4839", "unparseable"),  # prose: "equals" is no product of variables
    (r"\checkmark", "unparseable"),
    ("x+1", "wrong_answer"),
])
def test_answers_that_are_no_value_are_named_for_what_they_are(answer, reason):
    """From the red-team run: a policy boxes all sorts of text; only a number written
    as an expression (or an expression equal to the gold) is "unsimplified"."""
    assert V.verify(rf"\boxed{{{answer}}}", "450").reason == reason


def test_labelled_values_boxed_one_by_one_but_not_as_alternatives():
    gold = "k = 45, n = 2"
    assert V.verify(r"\boxed{k = 45} \quad \text{and} \quad \boxed{n = 2}", gold).passed
    assert V.verify(r"\boxed{45, 2}", gold).passed  # the values in the gold's order
    verdict = V.verify(r"\boxed{k = 45} or \boxed{n = 2}", gold)
    assert (verdict.reason, verdict.details["hedge"]) == ("hedged", "alternative")
    assert V.verify(r"\boxed{2, 45}", gold).reason == "wrong_answer"
