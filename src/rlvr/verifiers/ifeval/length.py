"""IFEval "length_constraints:*": words, sentences and paragraphs."""

from __future__ import annotations

import re

from rlvr.verifiers.ifeval.registry import instruction
from rlvr.verifiers.ifeval.text import compare, count_sentences, count_words


@instruction("length_constraints:number_words", "word count (\\w+ runs) 'less than' / "
             "'at least' N", num_words="int", relation="relation")
def number_words(response: str, num_words: int, relation: str) -> bool:
    return compare(count_words(response), relation, num_words)


@instruction("length_constraints:number_sentences", "sentence count 'less than' / "
             "'at least' N", num_sentences="int", relation="relation")
def number_sentences(response: str, num_sentences: int, relation: str) -> bool:
    return compare(count_sentences(response), relation, num_sentences)


@instruction("length_constraints:number_paragraphs", "exactly N paragraphs separated by "
             "the markdown divider ***", num_paragraphs="int")
def number_paragraphs(response: str, num_paragraphs: int) -> bool:
    parts = re.split(r"\s?\*\*\*\s?", response)
    count = len(parts)
    for index, part in enumerate(parts):
        if not part.strip():
            if index in (0, len(parts) - 1):
                count -= 1  # a divider at the very start or end opens no paragraph
            else:
                return False  # two dividers with nothing between
    return count == num_paragraphs


def _nth_within_count(kwargs: dict) -> str | None:
    if not 1 <= kwargs["nth_paragraph"] <= kwargs["num_paragraphs"]:
        return (f"nth_paragraph must be between 1 and num_paragraphs "
                f"({kwargs['num_paragraphs']}), got {kwargs['nth_paragraph']}")
    return None


@instruction("length_constraints:nth_paragraph_first_word", "exactly N paragraphs "
             "separated by blank lines ('\\n\\n'); paragraph n starts with the given word",
             validate=_nth_within_count, num_paragraphs="int", nth_paragraph="int",
             first_word="str")
def nth_paragraph_first_word(response: str, num_paragraphs: int, nth_paragraph: int,
                             first_word: str) -> bool:
    paragraphs = response.split("\n\n")
    count = sum(1 for p in paragraphs if p.strip())
    # IFEval indexes the raw split (empty pieces included) but bounds-checks against
    # the count of non-empty ones; kept as is.
    if nth_paragraph > count:
        return False
    paragraph = paragraphs[nth_paragraph - 1].strip()
    if not paragraph:
        return False
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    first = ""
    for char in word:
        if char in ".,?!'\"":
            break
        first += char.lower()
    return count == num_paragraphs and first == first_word.lower()
