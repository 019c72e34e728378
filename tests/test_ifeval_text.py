"""Offline sentence splitting (punkt's role in IFEval), word and token counts."""

from __future__ import annotations

import pytest

from rlvr.verifiers.ifeval.text import (
    compare, count_sentences, count_words, detect_language, split_sentences, word_tokens,
)


@pytest.mark.parametrize("text,sentences", [
    ("Hello world. This is a test.", ["Hello world.", "This is a test."]),
    ("Really? Yes! Fine.", ["Really?", "Yes!", "Fine."]),
    # known abbreviations, initials and decimals end no sentence
    ("Dr. Smith met Mrs. Jones at 3.30 today.", ["Dr. Smith met Mrs. Jones at 3.30 today."]),
    ("J. R. R. Tolkien wrote it. he liked it.", ["J. R. R. Tolkien wrote it.", "he liked it."]),
    ('She said "stop." Then left.', ['She said "stop."', "Then left."]),
    ("(A remark.) Next.", ["(A remark.)", "Next."]),
    ("Wow!!! Really?!", ["Wow!!!", "Really?!"]),
    # a line break alone ends no sentence (IFEval responses with bare lists count low)
    ("line one\nline two\n\nline three", ["line one\nline two\n\nline three"]),
    # punkt's known quirk: list numbers become sentences of their own
    ("1. First item. 2. Second", ["1.", "First item.", "2.", "Second"]),
    ("Version 2.0 is out.See notes.", ["Version 2.0 is out.See notes."]),  # no space: no break
    ("", []),
])
def test_split_sentences(text, sentences):
    assert split_sentences(text) == sentences
    assert count_sentences(text) == len(sentences)


def test_count_words_uses_word_character_runs():
    assert count_words("Don't stop -- 3.5 well-known!") == 7  # Don,t,stop,3,5,well,known


def test_word_tokens_are_nltk_word_tokenize():
    # Treebank conventions: contractions split, hyphenated words whole, punctuation apart
    assert word_tokens("DON'T STOP, IT'S WELL-KNOWN. Go!") == [
        "DO", "N'T", "STOP", ",", "IT", "'S", "WELL-KNOWN", ".", "Go", "!"]


def test_compare():
    assert compare(2, "less than", 3) and not compare(3, "less than", 3)
    assert compare(3, "at least", 3) and not compare(2, "at least", 3)


def test_language_detection_is_offline_and_deterministic():
    text = "Das ist ein kurzer deutscher Satz über das Wetter in Berlin."
    assert {detect_language(text) for _ in range(5)} == {"de"}
