"""The exact-answer verifier ("exact"): the completion's final answer must equal the
reference string, after whitespace normalisation; numbers compare by exact value.

Made for short-answer tasks with one canonical answer (the built-in arithmetic task).
The final answer is the text after the last "####" or "Answer:" marker when there is
one, else the whole completion: a completion that says more than the answer is wrong,
so padding and hedging ("19 or 20") cannot pay.

Holes closed (found by red-teaming; tests/test_exact.py):
- Commas count only as thousands separators ("1,000"): "4,50" is not 450.
- With the task's prompt (`verify(..., prompt=...)`), an answer read from a copy of the
  prompt does not match (reason "echoes_prompt"): when the last marker, its answer and
  the word before the marker appear together in the prompt, the policy restated the
  prompt's own worked example or answer key instead of answering. Restating the
  question and then answering ("What is 6*75? Answer: 450") is fine.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from rlvr.verifiers.base import InvalidReference, Verdict

_MARKER = re.compile(r"(?:####|answer\s*:)", re.IGNORECASE)
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
# Commas only between groups of three digits, as in 1,000 or -12,345.67.
_GROUPED = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?")


def final_answer(completion: str) -> str:
    """Text after the last answer marker (or the whole text), whitespace collapsed."""
    parts = _MARKER.split(completion)
    return " ".join(parts[-1].split())


def _as_number(text: str) -> Fraction | None:
    cleaned = text.replace("\u2212", "-")
    if "," in cleaned:
        if not _GROUPED.fullmatch(cleaned):
            return None  # "4,50" or "1,2,3": a list or a typo, not a number
        cleaned = cleaned.replace(",", "")
    if _NUMBER.fullmatch(cleaned):
        return Fraction(cleaned)
    return None


def _squashed(text: str) -> str:
    return re.sub(r"\s+", "", text).casefold()


def answer_copied_from_prompt(completion: str, prompt: str | None) -> bool:
    """Whether the final answer statement (last marker to the end) and the word before
    it occur together in the prompt: an echo of the prompt's own "... Answer: X".
    Without the preceding word an honest "Answer: 4" could be flagged only because a
    few-shot prompt happens to hold the same answer, so that case is let through."""
    markers = list(_MARKER.finditer(completion))
    if not prompt or not markers:
        return False  # without a marker the whole reply is the answer: nothing to copy into
    start = markers[-1].start()
    before = completion[:start].split()
    if not before:
        return False
    copied = _squashed(before[-1] + completion[start:])
    return copied in _squashed(prompt)


class ExactVerifier:
    name = "exact"
    uses_prompt = True  # an answer copied out of the prompt does not count

    def __init__(self, case_sensitive: bool = False) -> None:
        self.case_sensitive = case_sensitive

    def check_reference(self, reference: Any) -> None:
        if not isinstance(reference, (str, int)) or isinstance(reference, bool):
            raise InvalidReference(f"exact: reference must be a string or integer, "
                                   f"got {type(reference).__name__}")
        if not str(reference).strip():
            raise InvalidReference("exact: reference is empty")

    def verify(self, completion: str, reference: Any, prompt: str | None = None) -> Verdict:
        self.check_reference(reference)
        answer, gold = final_answer(completion), " ".join(str(reference).split())
        if not answer:
            return Verdict.wrong("no_answer", answer=answer)
        a_num, g_num = _as_number(answer), _as_number(gold)
        if a_num is not None and g_num is not None:
            same = a_num == g_num
        elif self.case_sensitive:
            same = answer == gold
        else:
            same = answer.casefold() == gold.casefold()
        if not same:
            return Verdict.wrong("wrong_answer", answer=answer)
        if answer_copied_from_prompt(completion, prompt):
            return Verdict.wrong("echoes_prompt", answer=answer)
        return Verdict.correct(answer=answer)
