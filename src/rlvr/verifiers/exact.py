"""The exact-answer verifier ("exact"): the completion's final answer must equal the
reference string, after whitespace normalisation; numbers compare by exact value.

Made for short-answer tasks with one canonical answer (the built-in arithmetic task).
The final answer is the text after the last "####" or "Answer:" marker when there is
one, else the whole completion: a completion that says more than the answer is wrong,
so padding and hedging ("19 or 20") cannot pay.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from rlvr.verifiers.base import InvalidReference, Verdict

_MARKER = re.compile(r"(?:####|answer\s*:)", re.IGNORECASE)
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")


def final_answer(completion: str) -> str:
    """Text after the last answer marker (or the whole text), whitespace collapsed."""
    parts = _MARKER.split(completion)
    return " ".join(parts[-1].split())


def _as_number(text: str) -> Fraction | None:
    cleaned = text.replace(",", "").replace("\u2212", "-")
    if _NUMBER.fullmatch(cleaned):
        return Fraction(cleaned)
    return None


class ExactVerifier:
    name = "exact"

    def __init__(self, case_sensitive: bool = False) -> None:
        self.case_sensitive = case_sensitive

    def check_reference(self, reference: Any) -> None:
        if not isinstance(reference, (str, int)) or isinstance(reference, bool):
            raise InvalidReference(f"exact: reference must be a string or integer, "
                                   f"got {type(reference).__name__}")
        if not str(reference).strip():
            raise InvalidReference("exact: reference is empty")

    def verify(self, completion: str, reference: Any) -> Verdict:
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
        return Verdict.correct(answer=answer) if same else Verdict.wrong("wrong_answer", answer=answer)
