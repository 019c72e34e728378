"""Find the final answer in a completion: the last `\\boxed{}`/`\\fbox{}`, `#### x`
(GSM8K), `Answer: x` or `The final answer is x`; optionally the last number.

Only the final answer counts. Every candidate is kept with its position so that the
hedging checks can see what else sits in the final position (`\\boxed{2} or \\boxed{3}`)
and what text comes right before it ("the answer is not ...").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rlvr.mathtext import find_boxes

# Markers whose answer runs to the end of the line. "final answer is" also matches
# "The final answer is: $x$." and "final answer: x".
_LINE_MARKERS = re.compile(
    r"####|\banswer\s*(?:is)?\s*:|\bfinal\s+answer\s*(?:is|:)\s*:?", re.IGNORECASE)
_LAST_NUMBER = re.compile(r"[-\u2212]?\d[\d,]*(?:\.\d+)?|[-\u2212]?\.\d+")


@dataclass(frozen=True)
class Candidate:
    """One place the completion states an answer: `text` spans [start, end)."""

    text: str
    start: int
    end: int
    method: str  # "boxed" | "marker" | "last_number"


# A box copied from the format instruction ("put your final answer as \\boxed{ANSWER}")
# holds a placeholder, not an answer.
_PLACEHOLDER = re.compile(
    r"^(?:\\text\s*\{)?\s*(?:(?:your|the)\s+)?(?:final\s+)?(?:answer|number|result|value)"
    r"(?:\s+here)?\s*\}?$|^(?:\.\.\.|\\[lc]?dots|\?|_+)$", re.IGNORECASE)


def is_placeholder(content: str) -> bool:
    """`ANSWER`, `your answer`, `\\text{final answer}`, `...`: an instruction's stand-in."""
    return _PLACEHOLDER.match(content.strip()) is not None


def boxed_candidates(text: str) -> list[Candidate]:
    """Every outermost box, in order (mathtext.find_boxes); a placeholder box
    (`\\boxed{ANSWER}`) is none."""
    return [Candidate(box.content, box.start, box.end, "boxed")
            for box in find_boxes(text) if not is_placeholder(box.content)]


MAX_MARKERS = 20  # only the last markers can be in the final position


def _marker_candidates(text: str, boxes: list[Candidate]) -> list[Candidate]:
    found = []
    # the last few only: each costs a scan to its line end (quadratic if all were kept)
    for match in list(_LINE_MARKERS.finditer(text))[-MAX_MARKERS:]:
        line_end = text.find("\n", match.end())
        line_end = len(text) if line_end < 0 else line_end
        # "The final answer is \boxed{5}": the box states the answer, not the marker.
        if any(match.end() <= box.start < line_end for box in boxes):
            continue
        content = text[match.end():line_end].strip()
        content = _strip_sentence_wrapping(content)
        found.append(Candidate(content, match.start(), line_end, "marker"))
    return found


# A sentence that names its subject in words, then states the value: "The largest $n$
# is 34." (the subject may hold math, `$n$`; "x = 5" is not such a sentence).
_STATED_VALUE = re.compile(r"^(?:the|a|an)\s+[^.]*?\s(?:is|are|equals)\s+(?P<value>\S.*)$",
                           re.IGNORECASE)


def _strip_sentence_wrapping(content: str) -> str:
    """`$5$.` -> `5`; `\\( 5 \\)` -> `5`: math delimiters and the closing full stop."""
    content = content.strip().strip("*").strip()  # markdown bold: **Answer:** 42
    # "Final Answer: The largest $n$ is 34.": the value after the sentence's verb
    stated = _STATED_VALUE.match(content)
    if stated:
        content = stated.group("value")
    # "The final answer is $x$. I hope it is correct.": the first math span is the answer
    math_span = re.match(r"^(\$\$?)((?:\\.|[^$\\])+)\1", content) or re.match(r"^\\\((.+?)\\\)", content)
    if math_span:
        return math_span.group(math_span.lastindex).strip()
    content = re.split(r"\.\s+(?=[A-Z])", content, maxsplit=1)[0]
    content = re.sub(r"[.\s]+$", "", content)
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"), ("**", "**")):
        if content.startswith(left) and content.endswith(right) and len(content) >= len(left) + len(right):
            content = content[len(left):len(content) - len(right)].strip()
    return re.sub(r"[.\s]+$", "", content)


_TRAILING_CHATTER = re.compile(r"(?:\s*(?:<\|[\w]+\|>\w*|I hope it is correct\.?))+\s*$",
                               re.IGNORECASE)


def statement_end(text: str) -> int:
    """Where the completion's own statement ends: before trailing template tokens and
    "I hope it is correct."."""
    chatter = _TRAILING_CHATTER.search(text, max(0, len(text) - 2000))
    return chatter.start() if chatter else len(text)


def answer_candidates(text: str) -> list[Candidate]:
    """All stated answers (boxes and line markers), ordered by position."""
    boxes = boxed_candidates(text)
    return sorted(boxes + _marker_candidates(text, boxes), key=lambda c: c.start)


def last_number(text: str) -> Candidate | None:
    """The last number in the text (the optional fallback for unmarked answers)."""
    matches = list(_LAST_NUMBER.finditer(text))
    if not matches:
        return None
    match = matches[-1]
    return Candidate(match.group().rstrip(","), match.start(), match.end(), "last_number")


_PLAIN_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")
BARE_MAX_CHARS = 200
BARE_MAX_WORDS = 2


def bare_answer(text: str) -> Candidate | None:
    """The whole text, when it is nothing but an answer: one line, short, at most two
    plain words (`42`, `x = 3`, `72 apples`, `\\text{Evelyn}`), as when a caller has
    already cut out the answer (an `<answer>` block). Prose is not an answer."""
    stripped = text.strip()
    if not stripped or "\n" in stripped or len(stripped) > BARE_MAX_CHARS:
        return None
    if len(_PLAIN_WORD.findall(stripped)) > BARE_MAX_WORDS:
        return None
    return Candidate(_strip_sentence_wrapping(stripped), 0, len(text), "whole")
