"""rlvr's own constraints (ids "rlvr:*"), hand-checked."""

from __future__ import annotations

import pytest

from rlvr.verifiers import InvalidReference
from rlvr.verifiers.ifeval import IfevalVerifier

V = IfevalVerifier()


def ref(instruction_id, **kwargs):
    return {"instruction_id_list": [instruction_id], "kwargs": [kwargs]}


@pytest.mark.parametrize("instruction_id,kwargs,response,followed", [
    ("rlvr:words_start_with", {"letter": "a"}, "Always ask, Anna's answer: AMAZING!", True),
    ("rlvr:words_start_with", {"letter": "A"}, "Always ask about bears", False),
    ("rlvr:words_start_with", {"letter": "a"}, "All 42 apples", False),  # a number is a word
    ("rlvr:words_start_with", {"letter": "a"}, "...!", False),  # no words at all
    ("rlvr:words_start_with", {"letter": "a"}, "Apple-banana", True),  # one hyphenated word
    ("rlvr:word_count_range", {"min_words": 2, "max_words": 3}, "don't stop now", True),
    ("rlvr:word_count_range", {"min_words": 2, "max_words": 3}, "one two three four", False),
    ("rlvr:word_count_range", {"min_words": 2, "max_words": 3}, "single", False),
    ("rlvr:word_count_range", {"min_words": 0, "max_words": 3}, "", False),  # empty: strict
    ("rlvr:no_repeated_words", {}, "Every word here differs.", True),
    ("rlvr:no_repeated_words", {}, "The cat saw the dog.", False),  # The / the
    ("rlvr:no_repeated_words", {}, "I can't and won't.", True),  # contractions stay whole
    ("rlvr:end_word", {"word": "done"}, 'We are DONE."  ', True),
    ("rlvr:end_word", {"word": "done"}, "Done and dusted.", False),
    ("rlvr:end_word", {"word": "done"}, "undone", False),
    ("rlvr:sentences_per_paragraph", {"num_sentences": 2}, "It rains. We stay!\n\nWhy? Because.", True),
    ("rlvr:sentences_per_paragraph", {"num_sentences": 2}, "It rains. We stay.\n\nFine.", False),
    ("rlvr:sentences_per_paragraph", {"num_sentences": 1}, "Dr. Who came.\n  \nThen left.", True),
])
def test_extra_constraints(instruction_id, kwargs, response, followed):
    assert V.verify(response, ref(instruction_id, **kwargs)).passed is followed


def test_extra_constraints_combine_with_ifeval_ones():
    reference = {"instruction_id_list": ["rlvr:words_start_with", "punctuation:no_comma"],
                 "kwargs": [{"letter": "s"}, {}]}
    assert V.verify("Silly snakes sleep soundly", reference).score == 1.0
    assert V.verify("Silly snakes, sleep soundly", reference).score == 0.5


@pytest.mark.parametrize("instruction_id,kwargs,message", [
    ("rlvr:words_start_with", {"letter": "7"}, "must be a letter"),
    ("rlvr:word_count_range", {"min_words": 5, "max_words": 2}, "exceeds max_words"),
    ("rlvr:end_word", {"word": "two words"}, "single word"),
    ("rlvr:sentences_per_paragraph", {}, "missing kwarg"),
])
def test_extra_constraints_validate_kwargs(instruction_id, kwargs, message):
    with pytest.raises(InvalidReference, match=message):
        V.check_reference(ref(instruction_id, **kwargs))
