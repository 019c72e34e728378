"""Degenerate responses against the ifeval verifier (issue 14, item 7): text that meets
an instruction's check without doing the task. IFEval's own semantics accept them (the
benchmark numbers depend on that), so they pass by default and fail under the opt-in
guards `min_words` and `degenerate="reject"`, which leave honest responses alone."""

from __future__ import annotations

import pytest

from rlvr.verifiers import get_verifier
from rlvr.verifiers.ifeval import IfevalVerifier

DEFAULT = IfevalVerifier()
GUARDED = IfevalVerifier(min_words=5, degenerate="reject")
REPEAT_REQUEST = "Write a riddle about a lamp."
END_PHRASE = "Is there anything else I can help with?"


def ref(instruction_id: str, **kwargs) -> dict:
    return {"instruction_id_list": [instruction_id], "kwargs": [kwargs]}


# (response, reference, the guard's reason): each passes IFEval's own check.
DEGENERATE = [
    ("the " * 300, ref("length_constraints:number_words", num_words=300,
                       relation="at least"), "degenerate"),
    ("A A A A", ref("rlvr:words_start_with", letter="A"), "too_short"),
    ("A A A A A A A A", ref("rlvr:words_start_with", letter="A"), "degenerate"),
    ("I like cats. " * 30, ref("length_constraints:number_sentences", num_sentences=30,
                                relation="at least"), "degenerate"),
    ("{}", ref("detectable_format:json_format"), "too_short"),
    ('""', ref("startend:quotation"), "too_short"),
    ("Hi", ref("punctuation:no_comma"), "too_short"),
    (REPEAT_REQUEST, ref("combination:repeat_prompt", prompt_to_repeat=REPEAT_REQUEST),
     "degenerate"),
    (f'"{END_PHRASE}"', ref("startend:end_checker", end_phrase=END_PHRASE), "degenerate"),
    ("keep keep keep keep keep keep keep keep keep keep",
     ref("keywords:frequency", keyword="keep", frequency=10, relation="at least"),
     "degenerate"),
]


@pytest.mark.parametrize("response,reference,reason", DEGENERATE)
def test_degenerate_text_passes_ifeval_semantics_by_default(response, reference, reason):
    assert DEFAULT.verify(response, reference).passed


@pytest.mark.parametrize("response,reference,reason", DEGENERATE)
def test_guards_reject_degenerate_text(response, reference, reason):
    verdict = GUARDED.verify(response, reference)
    assert (verdict.score, verdict.passed, verdict.reason) == (0.0, False, reason)
    assert verdict.details["guard"]  # says why, for the run's logs


def test_degenerate_alone_catches_wordless_text():
    reject = IfevalVerifier(degenerate="reject")
    assert reject.verify("{}", ref("detectable_format:json_format")).reason == "degenerate"
    assert reject.verify("Hi", ref("punctuation:no_comma")).passed  # short is not degenerate


HONEST = [
    ("Amy always adores apples and avocados after autumn arrives.",
     ref("rlvr:words_start_with", letter="A")),
    ("Lamps glow at night and sleep by day. They have a shade but never sit in it. "
     "They have a bulb but never grow. Their cord is long yet they never walk away. "
     "Every evening someone flips a small switch and the room fills with warm yellow "
     "light. What are they?",
     ref("length_constraints:number_words", num_words=40, relation="at least")),
    (REPEAT_REQUEST + " I stand on a table with a hat on my head; I wake when you "
     "press my button. What am I?",
     ref("combination:repeat_prompt", prompt_to_repeat=REPEAT_REQUEST)),
    ("Thanks for asking about tide pools; they are best visited at low tide. "
     + END_PHRASE, ref("startend:end_checker", end_phrase=END_PHRASE)),
    ('{"city": "Lisbon", "reason": "mild winters and good food"}',
     ref("detectable_format:json_format")),
    ("Keep calm. Keep going. Keep learning, and keep the notes you take, because "
     "what you keep today you use tomorrow.",
     ref("keywords:frequency", keyword="keep", frequency=5, relation="at least")),
]


@pytest.mark.parametrize("response,reference", HONEST)
def test_guards_leave_honest_responses_alone(response, reference):
    assert DEFAULT.verify(response, reference).passed
    assert GUARDED.verify(response, reference).passed


def test_guard_keeps_partial_credit_of_non_degenerate_text():
    reference = {"instruction_id_list": ["punctuation:no_comma", "change_case:english_capital"],
                 "kwargs": [{}, {}]}
    text = "The weather is mild today and the sea is calm enough for a swim."
    assert GUARDED.verify(text, reference).score == DEFAULT.verify(text, reference).score == 0.5


def test_a_response_that_does_not_repeat_the_request_is_no_echo():
    # graded as IFEval does (not followed), not turned into a guard verdict
    verdict = GUARDED.verify("Here is a riddle about a lamp for you to solve.",
                             ref("combination:repeat_prompt", prompt_to_repeat=REPEAT_REQUEST))
    assert verdict.reason == "not_followed"


@pytest.mark.parametrize("options", [{"degenerate": "maybe"}, {"min_words": -1},
                                     {"min_words": True}])
def test_guard_options_are_validated(options):
    with pytest.raises(ValueError):
        IfevalVerifier(**options)


def test_guards_as_verifier_options():
    # the form a training config uses: reward.options={min_words: 5, degenerate: reject}
    verifier = get_verifier("ifeval", min_words=5, degenerate="reject")
    assert verifier.verify("A A A A A A A A", ref("rlvr:words_start_with", letter="A")
                           ).reason == "degenerate"


def test_real_prose_is_not_degenerate(shared_data):
    # honest text of the shared data: IFEval's prompts and GSM8K's worked solutions
    import json

    from rlvr.verifiers.ifeval.guard import repetition_problem
    from rlvr.verifiers.ifeval.text import reader_words

    texts = [json.loads(line)["prompt"] for line in
             (shared_data / "ifeval" / "input_data.jsonl").read_text().splitlines()]
    texts += [json.loads(line)["answer"] for line in
              (shared_data / "gsm8k" / "test.jsonl").read_text().splitlines()]
    flagged = [t for t in texts if repetition_problem(reader_words(t))]
    assert len(texts) == 541 + 1319 and flagged == []


def test_a_paragraph_repeated_five_times_is_degenerate():
    paragraph = "Lamps glow at night and sleep by day. They have a shade but never sit in it. "
    reference = ref("length_constraints:number_words", num_words=30, relation="at least")
    assert GUARDED.verify(paragraph * 4, reference).passed  # up to four times: a known limit
    assert GUARDED.verify(paragraph * 5, reference).reason == "degenerate"
