"""The final answer is the last answer the response commits to; what comes after it
is either a new commitment, explanation, or a conflict (reason `conflicting`).

Commitments are boxes, `####`, `Answer:` / "The final answer is" lines, "the answer
(result, solution) is X" and corrections ("Actually, X"; statements.py), and, when the
text has none of those, the closing sentence's reading (final_statement.py). A later
commitment supersedes an earlier one: `\\boxed{3}. Wait, 17-15=2, so the answer is
\\boxed{2}.` answers 2, and so does `<think>... \\boxed{3} ...</think> The answer is 2`.
Only the last one is ever judged, so extra candidates can never raise the reward.

After the last marked commitment, the closing sentence is read as well:
- after a box, a marker line or "the answer is X", a closing `= VALUE` or "is VALUE"
  is a new commitment when the text after the answer corrects it ("Wait", "actually",
  "mistake", ...: `\\boxed{3}. Wait: 17 - 15 = 2.` answers 2) or offers an alternative
  to it (`\\boxed{24}. It is 23 or it is 24.` hedges); otherwise it is explanation
  (`\\boxed{5}. So the perimeter is 4 * 5 = 20.` answers 5), as is any other closing
  sentence;
- after "the result is X" ("The result is 12, which times 3 gives $36$."), a closing
  value (one number or span, not an equation) is the new commitment, unless it is one
  of the question's quantities (a number in the prompt: "The result is 12. Tom had 30
  apples." answers 12);
- a bold number after the final answer that states another value (`\\boxed{450}, that
  is **500**.`) is `conflicting`: it is emphasised like an answer but marked as none,
  so the response has not said which of the two it means; a quantity of the question
  (`\\boxed{450}. We had **6** boxes.` for "What is 6 * 75?") is explanation.
A closing justification ("Check: 9 * 2 = 18", "since ...") is never read at all.
"""

from __future__ import annotations

import re
from typing import Callable

from rlvr.verifiers.math.extraction import Candidate
from rlvr.verifiers.math.hedging import offered_alternative

_NUMBER = re.compile(r"(?<![\w.])[-+\u2212]?\d[\d,]*(?:\.\d+)?(?![\d])")
_BOLD_NUMBER = re.compile(r"(?:\*\*|\\textbf\s*\{)\s*(?:\\?\$)?\s*(?P<value>[-+\u2212]?\d[\d,]*"
                          r"(?:\.\d+)?(?:\s*/\s*\d+)?)\s*\$?\s*(?:\*\*|\})")
_PLAIN_VALUE = re.compile(r"^[-+\u2212]?\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+)?$")
STRONG = ("boxed", "marker", "statement")  # not "result": it may name a step
# Words that take back what was just said: the closing value after them corrects the box.
_CORRECTION = re.compile(
    r"\b(?:wait|actually|mistake|mistaken|wrong|error|oops|correction|corrected|"
    r"re-?check(?:ing)?|re-?comput(?:e|ing)|re-?do(?:ing)?|instead|sorry|fix(?:ing)?)\b"
    r"|\bno\b\s*[,.:;!]", re.IGNORECASE)
MAX_BOLD = 20  # bold numbers read after the final answer


def _number_key(text: str) -> str:
    return text.replace(",", "").replace("\u2212", "-").lstrip("+")


def known_quantities(prompt: str | None) -> set[str]:
    """The numbers of the question. (Not the working's: what the text says before its
    final answer must not change how the text after it is read, or an earlier candidate
    could turn a 0 into a 1; after a box, restating the working is explanation anyway.)"""
    return {_number_key(m.group()) for m in _NUMBER.finditer(prompt or "")}


def _is_known(candidate: Candidate, known: set[str]) -> bool:
    text = candidate.text.strip()
    return bool(_PLAIN_VALUE.match(text)) and _number_key(text) in known


def settle(text: str, commitments: list[Candidate], closing: list[Candidate],
           prompt: str | None) -> list[Candidate]:
    """The candidates in order with the closing reading added where it is a new
    commitment (see the module docstring). `commitments` is not empty."""
    last = commitments[-1]
    if not closing or closing[0].start < last.end:
        return commitments
    if last.method in STRONG:  # only a correction or an alternative re-opens it
        return commitments + [
            c for c in closing if c.method in ("final_equals", "final_value") and (
                _CORRECTION.search(text, last.end, c.start)
                or offered_alternative(text, c.start, c.end, c.text, None))]
    step = closing[0]
    if len(closing) != 1 or "=" in step.text or _is_known(step, known_quantities(prompt)):
        return commitments  # an equation, several spans, or the question's quantity
    return commitments + [step]


def conflicting_statement(text: str, final: Candidate, prompt: str | None,
                          same_answer: Callable[[str, str], bool]) -> str | None:
    """A bold number after the final answer stating a different value, or None."""
    known = None
    for match in list(_BOLD_NUMBER.finditer(text, final.end))[:MAX_BOLD]:
        stated = match.group("value")
        if "".join(stated.split()) == "".join(final.text.split()):
            continue
        if known is None:
            known = known_quantities(prompt)
        if _number_key(stated) in known or same_answer(stated, final.text):
            continue
        return stated[:200]
    return None
