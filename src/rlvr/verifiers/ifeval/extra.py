"""rlvr's own constraints beyond IFEval, in the same reference shape, ids "rlvr:*".

Words here are words as a reader sees them (`text.reader_words`): runs of letters or
digits joined by inner apostrophes or hyphens, so "don't" and "well-known" are one
word each. A response with no words at all follows none of these constraints.

- rlvr:words_start_with {letter}: every word starts with `letter` (case-insensitive);
  the seed example "respond only with words that start with A". A number is a word
  that starts with no letter, so "42" breaks it.
- rlvr:word_count_range {min_words, max_words}: min_words <= word count <= max_words.
- rlvr:no_repeated_words {}: no word occurs twice (case-insensitive: "The ... the"
  repeats).
- rlvr:end_word {word}: the last word is `word` (case-insensitive); trailing
  punctuation, quotes and whitespace after it are allowed, more words are not.
- rlvr:sentences_per_paragraph {num_sentences}: every paragraph (blocks separated by
  a blank line) has exactly `num_sentences` sentences (`text.split_sentences`).
"""

from __future__ import annotations

import re

from rlvr.verifiers.ifeval.registry import instruction
from rlvr.verifiers.ifeval.text import count_sentences, reader_words


def _is_letter(kwargs: dict) -> str | None:
    return None if kwargs["letter"].isalpha() else f"letter must be a letter, got {kwargs['letter']!r}"


@instruction("rlvr:words_start_with", "every word starts with the given letter",
             validate=_is_letter, letter="char")
def words_start_with(response: str, letter: str) -> bool:
    words = reader_words(response)
    target = letter.casefold()
    return bool(words) and all(w[0].casefold() == target for w in words)


def _range_ordered(kwargs: dict) -> str | None:
    if kwargs["min_words"] > kwargs["max_words"]:
        return f"min_words ({kwargs['min_words']}) exceeds max_words ({kwargs['max_words']})"
    return None


@instruction("rlvr:word_count_range", "the word count lies in [min_words, max_words]",
             validate=_range_ordered, min_words="int", max_words="int")
def word_count_range(response: str, min_words: int, max_words: int) -> bool:
    count = len(reader_words(response))
    return count > 0 and min_words <= count <= max_words


@instruction("rlvr:no_repeated_words", "no word is used twice (case-insensitive)")
def no_repeated_words(response: str) -> bool:
    words = [w.casefold() for w in reader_words(response)]
    return bool(words) and len(set(words)) == len(words)


def _one_word(kwargs: dict) -> str | None:
    if reader_words(kwargs["word"]) != [kwargs["word"].strip()]:
        return f"word must be a single word, got {kwargs['word']!r}"
    return None


@instruction("rlvr:end_word", "the last word is the given word", validate=_one_word,
             word="str")
def end_word(response: str, word: str) -> bool:
    words = reader_words(response)
    return bool(words) and words[-1].casefold() == word.strip().casefold()


@instruction("rlvr:sentences_per_paragraph", "every paragraph has exactly N sentences",
             num_sentences="int")
def sentences_per_paragraph(response: str, num_sentences: int) -> bool:
    paragraphs = [p for p in re.split(r"\n\s*\n", response) if p.strip()]
    return bool(paragraphs) and all(count_sentences(p) == num_sentences for p in paragraphs)
