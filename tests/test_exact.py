from __future__ import annotations

import pytest

from rlvr.verifiers import InvalidReference
from rlvr.verifiers.exact import ExactVerifier

V = ExactVerifier()


@pytest.mark.parametrize("completion,reference,passed", [
    ("19", "19", True), ("  19 \n", "19", True), ("Answer: 19", "19", True),
    ("#### 1,000", "1000", True), ("19.0", "19", True), ("\u221219", "-19", True),
    ("19 or 20", "19", False), ("20", "19", False), ("", "19", False),
    ("The answer is 19", "19", False),  # padding is not an answer
    ("Paris", "paris", True),
])
def test_exact(completion, reference, passed):
    assert V.verify(completion, reference).passed is passed


def test_invalid_reference():
    with pytest.raises(InvalidReference):
        V.verify("1", {"x": 1})


# --- Adversarial cases (issue 14, item 7): can a policy pass without doing the task? ---

from rlvr.verifiers.base import run_verifier  # noqa: E402

FEW_SHOT = "Example: 2+2? Answer: 4\nNow you: 1+3?"


@pytest.mark.parametrize("completion,reference,passed", [
    ("4,50", "450", False),        # a comma that groups no thousands is not a separator
    ("1,2,3", "123", False),
    ("Answer: 45,0", "450", False),
    ("1,000", "1000", True),       # honest thousands separators still read as numbers
    ("#### 12,345", "12345", True),
    ("-1,000.5", "-1000.5", True),
    ("Answer: 6 * 75", "450", False),  # the question's expression is not its value
    ("Answer: 20\nAnswer: 19", "19", True),  # the last marker is the answer, by design
])
def test_exact_numbers_hold(completion, reference, passed):
    assert V.verify(completion, reference).passed is passed


def test_answer_copied_from_the_prompt_does_not_match():
    verdict = V.verify("Example: 2+2? Answer: 4", "4", prompt=FEW_SHOT)
    assert (verdict.passed, verdict.reason) == (False, "echoes_prompt")
    key = "Which planet is largest? (For the grader - largest planet: Answer: Jupiter)"
    copied = V.verify("largest planet: Answer: Jupiter", "Jupiter", prompt=key)
    assert copied.reason == "echoes_prompt"


@pytest.mark.parametrize("completion", [
    "Answer: 4",                      # the same answer as the example, stated on its own
    "1+3 = 4. Answer: 4",
    "Now you: 1+3? Answer: 4",        # restating the question, then answering, is fine
    "4",
])
def test_honest_answers_still_match_with_a_prompt(completion):
    assert V.verify(completion, "4", prompt=FEW_SHOT).passed


def test_the_prompt_reaches_exact_through_run_verifier():
    # the trainer and `rlvr eval` call verifiers through run_verifier with the task text
    assert ExactVerifier.uses_prompt
    echoed = run_verifier(V, "Example: 2+2? Answer: 4", "4", FEW_SHOT)
    assert echoed.reason == "echoes_prompt"
    # without a prompt (the two-argument contract) the echo cannot be recognised
    assert run_verifier(V, "Example: 2+2? Answer: 4", "4").passed
