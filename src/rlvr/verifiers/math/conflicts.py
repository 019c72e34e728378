"""The final answer is the last one stated: a different one anywhere after a box is a
conflict (reason `conflicting`).

Issue 14: `First \\boxed{450}. Actually the answer is 500.` scored 1 against 450,
because "the answer is" without a colon is not an extraction marker, and the trained
policy's `\\boxed{6 * 75} ... So the answer is \\textbf{8100}.` relied on the same gap.
A completion that states two different final answers has not committed to one, so:

- a box followed, anywhere later, by a box or marker with a different value (`I first
  wrote \\boxed{3}. Wait ... \\boxed{2}` is two answers; restating `\\boxed{2}` is not);
- after the final answer, a looser statement of a different value: "the answer is
  500", "the final result is **500**", "answer = $500$", "Actually, 500.".

Restating the same value (`\\boxed{450}. So the answer is 450 dollars.`) stays correct,
and so do statements that are not values ("the answer is correct", "the answer is not
6"). Values are compared by the verifier (`same_answer`), so `0.5` restates `\\frac12`.
"""

from __future__ import annotations

import re
from typing import Callable

from rlvr.verifiers.math.extraction import Candidate

# "the (final|correct) answer is", "the result should be", "answer =": a value follows
_LOOSE_STATEMENT = re.compile(
    r"\b(?:final\s+|correct\s+|right\s+|true\s+)?(?:answer|result|solution|value)\s*"
    r"(?:is|=|would\s+be|should\s+be|must\s+be|equals)\s*:?\s*"
    # a correction: "Actually, 500." / "Correction: it is 500"
    r"|\b(?:actually|correction|rather|instead)\b\s*[:,]?\s*(?:(?:it|that)(?:'s|\s+is)\s+)?"
    r"(?:the\s+answer\s+is\s+)?",
    re.IGNORECASE)
_NOT = re.compile(r"^(?:not\b|n't\b|never\b|\\neq?)", re.IGNORECASE)
# What can follow as a value: a math span, bold text, or a plain number/fraction
_VALUE = re.compile(
    r"\$\$?(?P<dollar>(?:\\.|[^$\\])+)\$\$?"
    r"|\\\((?P<paren>.+?)\\\)"
    r"|\\textbf\s*\{(?P<bold>[^{}]+)\}"
    r"|\*\*(?P<stars>[^*]+)\*\*"
    # a plain number that ends the statement: "is 500.", "is 500 dollars" (not the 6 of
    # "6*75 = 450", which begins a calculation)
    r"|(?P<plain>[-+\u2212]?\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+)?)(?=\s*(?:[.,;:!?)]|$)|\s+[A-Za-z])")
MAX_STATEMENTS = 20  # loose statements read after the final answer


def _loose_statements(text: str, start: int) -> list[str]:
    """Values stated loosely after position `start` ("the answer is 500")."""
    found = []
    for match in list(_LOOSE_STATEMENT.finditer(text, start))[:MAX_STATEMENTS]:
        rest = text[match.end():match.end() + 200]
        if _NOT.match(rest):
            continue
        value = _VALUE.match(rest)
        if value:
            found.append(next(g for g in value.groups() if g is not None).strip())
    return found


def conflicting_statement(text: str, candidates: list[Candidate], group: list[Candidate],
                          same_answer: Callable[[str, str], bool]) -> str | None:
    """A stated answer that differs from the final one (`group[-1]`), or None.

    `group` is the final group (several boxes joined by connecting words, which the
    hedging checks judge as one statement); boxes before it and loose statements after
    it must all state the same value."""
    final = group[-1].text
    earlier_boxes = [c.text for c in candidates
                     if c.method == "boxed" and c.end <= group[0].start]
    seen = {"".join(final.split())}
    for stated in earlier_boxes + _loose_statements(text, group[-1].end):
        key = "".join(stated.split())
        if key in seen:  # written the same way: no need to compare values again
            continue
        seen.add(key)
        if stated and not same_answer(stated, final):
            return stated[:200]
    return None
