"""Answers stated without a box or a colon marker (issue 14, item 6: right answers
paid): the closing sentence's math, a value the text ends on after "is", a marker
line written as a sentence, and template tokens after the text. Each expected
verdict is decided by hand; each accepting rule has a twin that must stay 0."""

from __future__ import annotations

import pytest

from rlvr.verifiers.math.verifier import MathVerifier

V = MathVerifier()


@pytest.mark.parametrize("completion,reference", [
    ("Therefore $x \\geq 5$ is the solution.", "x \\ge 5"),
    ("We find that $x \\lt 3$.", "x < 3"),
    ("The identity matrix is $ \\begin{pmatrix}1 & 0 \\\\ 0 & 1\\end{pmatrix} $.",
     "\\begin{pmatrix}1 & 0 \\\\ 0 & 1\\end{pmatrix}"),
    ("First we get $12$ apples. So the total is $34$.", "34"),
    ("$5$, which is our answer.", "5"),
    ("Answer \\[ 9 \\]", "9"),
    ("Answer $$\n9\n$$", "9"),
    ("$$\\text{The midpoints form a regular hexagon}$$", "\\text{The midpoints form a regular hexagon}"),
    ("Therefore, the probability that Alice wins the game is 2/3.", "\\frac23"),
    ("So there are 12 distinct sequences.", "12"),
    ("Final Answer: The largest $n$ is 34.", "34"),
    ("Final Answer: The volume of $ABCH$ is 120. I hope it is correct.", "120"),
    ("The answer is $\\frac12$. <|im_start|>user", "0.5"),
    ("so \\boxed{5}<|endoftext|>", "5"),
])
def test_stated_answers_are_read(completion, reference):
    verdict = V.verify(completion, reference)
    assert verdict.passed, verdict


@pytest.mark.parametrize("completion,reference,reason", [
    # a number mid-reasoning is not the answer: another sentence follows it
    ("We compute $5$. Then we think about it more and more", "5", "no_answer"),
    ("so it is 5 then we go on", "5", "no_answer"),
    # the closing sentence's spans still go through the hedging checks
    ("So it is $2$ or $3$.", "2", "hedged"),
    ("The answer is not $5$.", "5", "hedged"),
    ("The answer is not 5.", "5", "no_answer"),
    # inline math does not run over lines
    ("Answer $ \n 9 \n $", "9", "no_answer"),
    # and a closing expression is still judged by the answer-form rules
    ("We get $6 * 75$.", "450", "unsimplified"),
    ("Final Answer: The product is 6 * 75", "450", "unsimplified"),
    # the value after "is" must be the one stated
    ("Therefore, the probability that Alice wins the game is 3/4.", "\\frac23", "wrong_answer"),
])
def test_what_is_not_read_as_the_answer(completion, reference, reason):
    verdict = V.verify(completion, reference)
    assert (verdict.passed, verdict.reason) == (False, reason), verdict


def test_a_closing_question_states_no_answer():
    assert V.verify("So is it $5$ then, or what, I wonder?", "5").reason == "no_answer"
    assert V.verify("Therefore $5$ is the answer!", "5").passed


@pytest.mark.parametrize("completion,passed,reason", [
    ("34 - 10 = 24", True, "correct"),  # the untrained SmolLM2's form
    ("34 - 10 = 24.", True, "correct"),
    ("34-10=24", True, "correct"),
    ("34 - 10 = 25.", False, "wrong_answer"),
    ("24 = 34 - 10.", False, "unsimplified"),  # the text ends on an expression
    ("34 - 10 = 34 - 10", False, None),  # no value at the end: never paid
])
def test_a_closing_equation_states_the_value_after_its_last_equals(completion, passed, reason):
    verdict = MathVerifier().verify(completion, "24", prompt="What is 34 - 10?")
    assert verdict.passed is passed
    if reason:
        assert verdict.reason == reason
