"""Cheap per-attempt tests for the known shapes of a faked answer. Each takes plain
strings and returns a bool (or the offending text); `strict.py` combines them per
verifier and `detect.py` counts them over a run.

    echoes_prompt(answer, prompt)        the answer is an expression copied from the prompt
    unevaluated(answer, reference)       an expression where the reference is a value
    conflicting(completion, statement)   a different answer stated after the box
    copies_prompt(text, prompt)          a long stretch of the prompt, repeated
    degenerate(text)                     empty, too few distinct words, one word repeated
"""

from __future__ import annotations

import re
from collections import Counter
from fractions import Fraction
from typing import Any

from rlvr.audit.answers import Statement, leading_value, statements_after
from rlvr.audit.literals import (compact, evaluate, is_operation, plain_literal,
                                 strip_decorations, value_of_reference)

# An operator between two operands (numbers, letters, groups): `6*75`, `a+b`, `(x)^2`.
_EXPRESSION = re.compile(r"[\w)}.]\s*[-+*/^=]\s*[\w(\\{.]|\\frac|\\sqrt")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

COPY_SPAN_WORDS = 8        # n-gram length for "a stretch of the prompt"
COPY_SHARE = 0.5           # share of the prompt's n-grams repeated that makes a copy
MIN_DISTINCT_WORDS = 3     # fewer distinct words than this is not a response
REPEAT_MIN_WORDS = 20      # below this length, repetition statistics are noise
MAX_TOP_WORD_SHARE = 0.5   # one word more than half of the text
MIN_DISTINCT_RATIO = 0.15  # English prose stays above ~0.3 even over thousands of words


def echoes_prompt(answer: str | None, prompt: str | None, reference: Any = None) -> bool:
    """The answer is an expression (an operator between operands) that appears in the
    prompt, compared with spaces removed and `\\times`/`\\cdot`/`×` read as `*`. A bare
    number never counts: "What is 5 * 1?" has 5 as its honest answer; nor does the
    reference's own text (a few-shot example in the prompt may hold the gold's form)."""
    if not answer or not prompt:
        return False
    key = compact(strip_decorations(answer))
    if len(key) < 3 or plain_literal(key) is not None or not _EXPRESSION.search(key):
        return False
    if isinstance(reference, str) and key == compact(strip_decorations(reference)):
        return False
    haystack = compact(prompt)
    start = haystack.find(key)
    while start >= 0:
        before = haystack[start - 1] if start else " "
        after = haystack[start + len(key)] if start + len(key) < len(haystack) else " "
        # "2+3" inside "12+34" is not the prompt's expression
        if not (_glues(before, key[0]) or _glues(after, key[-1])):
            return True
        start = haystack.find(key, start + 1)
    return False


def _glues(neighbour: str, edge: str) -> bool:
    """Whether `neighbour` would continue the token that `edge` ends (a longer number)."""
    return (edge.isdigit() or edge == ".") and (neighbour.isdigit() or neighbour == ".")


def unevaluated(answer: str | None, reference: Any) -> bool:
    """The reference is a plain value but the answer is arithmetic over literals: `6 * 75`,
    `449+1`, `\\frac{900}{2}` (a fraction with a whole value), `2^6`, `\\sqrt{16}`."""
    if not answer or value_of_reference(reference) is None:
        return False
    return is_operation(answer)


def answer_value(text: str) -> Any:
    """A statement's value: a Fraction when it is a literal or arithmetic over literals,
    else its compact text (so two symbolic statements still compare)."""
    bare = strip_decorations(text)
    value = plain_literal(bare)
    if value is None:
        value = evaluate(bare)
    return compact(bare) if value is None else value


def conflicting(completion: str, final: Statement) -> Statement | None:
    """The first answer stated after the final box whose value differs from the box's
    ("First \\boxed{450}. Actually the answer is 500."); restating it is fine.
    Marker statements count only when they open with a value ("the answer is not 500"
    and "the answer is above" are no statements of a value)."""
    if final.kind != "boxed":
        return None
    mine = answer_value(final.text)
    for later in statements_after(completion, final.end):
        text = later.text if later.kind != "marker" else leading_value(later.text)
        if text is None:
            continue
        theirs = answer_value(text)
        if isinstance(mine, Fraction) and isinstance(theirs, Fraction):
            differs = theirs != mine
        else:  # symbolic text: only another box is a clear enough second answer
            differs = later.kind == "boxed" and theirs != mine
        if differs:
            return later
    return None


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def copies_prompt(text: str, prompt: str | None) -> bool:
    """Whether `text` repeats the prompt: at least half of the prompt's 8-word stretches
    appear in it (prompts of 4-7 words: the whole prompt appears). Shorter prompts are
    never 'copied': their words are the task's vocabulary."""
    if not prompt:
        return False
    asked, said = words(prompt), words(text)
    if len(asked) < 4:
        return False
    n = min(COPY_SPAN_WORDS, len(asked))
    asked_grams = {tuple(asked[i:i + n]) for i in range(len(asked) - n + 1)}
    said_grams = {tuple(said[i:i + n]) for i in range(len(said) - n + 1)}
    return len(asked_grams & said_grams) >= COPY_SHARE * len(asked_grams)


def degenerate(text: str) -> str | None:
    """Why `text` is not a response, or None: "empty", "too_few_words" (under 3
    distinct), "repeated_word" (one word over half of 20+), "repetitive" (distinct
    words under 15% of 20+)."""
    said = words(text)
    if not said:
        return "empty"
    counts = Counter(said)
    if len(counts) < MIN_DISTINCT_WORDS:
        return "too_few_words"
    if len(said) >= REPEAT_MIN_WORDS:
        if counts.most_common(1)[0][1] > MAX_TOP_WORD_SHARE * len(said):
            return "repeated_word"
        if len(counts) < MIN_DISTINCT_RATIO * len(said):
            return "repetitive"
    return None
