"""The final answer is the last answer the response commits to; what comes after it
is either a new commitment, explanation, or a conflict (reason `conflicting`).

Commitments are boxes, `####`, `Answer:` / "The final answer is" lines, "the answer
(result, solution) is X" and corrections ("Actually, X"; statements.py), and, when the
text has none of those, the closing sentence's reading (final_statement.py). A later
commitment supersedes an earlier one: `\\boxed{3}. Wait, 17-15=2, so the answer is
\\boxed{2}.` answers 2, and so does `<think>... \\boxed{3} ...</think> The answer is 2`.
Only the last one is ever judged, so extra candidates can never raise the reward.

After the last marked commitment, the closing sentence is read as well:
- a value that is one of the question's or the working's quantities (a number in the
  prompt or before the final answer) is explanation: `\\boxed{24}. He had 30 apples.`;
- after a box, a marker line or "the answer is X", a closing `= VALUE` or "is VALUE"
  is a new commitment when the text after the answer corrects it ("Wait", "actually",
  "mistake", ...: `\\boxed{3}. Wait: 17 - 15 = 2.` answers 2) or offers an alternative
  to it (`\\boxed{24}. It is 23 or it is 24.` hedges); otherwise it is explanation
  (`\\boxed{5}. So the perimeter is 4 * 5 = 20.` answers 5), as is any other closing
  sentence;
- after "the result is X" ("The result is 12, which times 3 gives $36$."), a closing
  value (one number or span, not an equation) is the new commitment;
- a bold number after the final answer that states another value (`\\boxed{450}, that
  is **500**.`) is `conflicting`: it is emphasised like an answer but marked as none,
  so the response has not said which of the two it means.
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


def known_quantities(text: str, before: int, prompt: str | None) -> set[str]:
    """The numbers of the question and of the working before position `before`."""
    found = {_number_key(m.group()) for m in _NUMBER.finditer(text, 0, before)}
    if prompt:
        found |= {_number_key(m.group()) for m in _NUMBER.finditer(prompt)}
    return found


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
    known = known_quantities(text, last.start, prompt)
    if any(_is_known(c, known) for c in closing):
        return commitments  # explanation: the question's or the working's quantities
    if last.method in STRONG:
        supersedes = [c for c in closing if c.method in ("final_equals", "final_value") and (
            _CORRECTION.search(text, last.end, c.start)
            or offered_alternative(text, c.start, c.end, c.text, None))]
    else:
        supersedes = closing if len(closing) == 1 and "=" not in closing[0].text else []
    return commitments + supersedes


def conflicting_statement(text: str, final: Candidate, prompt: str | None,
                          same_answer: Callable[[str, str], bool]) -> str | None:
    """A bold number after the final answer stating a different value, or None."""
    known = None
    for match in list(_BOLD_NUMBER.finditer(text, final.end))[:MAX_BOLD]:
        stated = match.group("value")
        if "".join(stated.split()) == "".join(final.text.split()):
            continue
        if known is None:
            known = known_quantities(text, final.start, prompt)
        if _number_key(stated) in known or same_answer(stated, final.text):
            continue
        return stated[:200]
    return None
