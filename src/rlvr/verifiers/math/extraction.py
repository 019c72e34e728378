"""Find the final answer in a completion: the last `\\boxed{}`/`\\fbox{}`, `#### x`
(GSM8K), `Answer: x` or `The final answer is x`; optionally the last number.

Only the final answer counts. Every candidate is kept with its position so that the
hedging checks can see what else sits in the final position (`\\boxed{2} or \\boxed{3}`)
and what text comes right before it ("the answer is not ...").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BOX_COMMAND = re.compile(r"\\(?:boxed|fbox)\s*\{")
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


def _match_brace(text: str, open_index: int) -> int | None:
    """Index of the `}` closing the `{` at `open_index` (escaped braces skipped)."""
    depth = 0
    i = open_index
    while i < len(text):
        char = text[i]
        if char == "\\":  # \{ and \} are literal braces of a set, not grouping
            i += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _brace_pairs(text: str) -> dict[int, int]:
    """Index of each grouping `{` -> index of its `}`, in one pass."""
    pairs, stack, i = {}, [], 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "{":
            stack.append(i)
        elif text[i] == "}" and stack:
            pairs[stack.pop()] = i
        i += 1
    return pairs


_COLOR = re.compile(r"\\(?:textcolor|color)\s*\{[^{}]*\}")


def unwrap_boxes(content: str, braces: bool = False) -> str:
    r"""`\boxed{\boxed{x}}` -> `x`: a box whose whole content is another box or a
    colour (`\color{red}{450}`, `\textcolor{red}{450}`, `\color{red} 450`), and with
    `braces` (a box's content) a brace group (`\boxed{{24}}`; elsewhere `{1,3}` may be a
    set written loosely, so it is kept). Linear in the length even for thousands of
    nested boxes (one brace-matching pass)."""
    pairs = _brace_pairs(content)
    start, end = 0, len(content)  # the current content is content[start:end]
    coloured = False  # the group right after a colour command is its argument
    while True:
        while start < end and content[start].isspace():
            start += 1
        while end > start and content[end - 1].isspace():
            end -= 1
        if (braces or coloured) and start < end and content[start] == "{" \
                and pairs.get(start) == end - 1:
            start, end, coloured = start + 1, end - 1, False
            continue
        color = _COLOR.match(content, start, end)
        if color:  # `\color{red}` colours what follows; `\textcolor{red}{x}` its group
            start, coloured = color.end(), True
            continue
        match = _BOX_COMMAND.match(content, start, end)
        if not match or pairs.get(match.end() - 1) != end - 1:
            return content[start:end]
        start, end = match.end(), end - 1


# A box copied from the format instruction ("put your final answer as \\boxed{ANSWER}")
# holds a placeholder, not an answer.
_PLACEHOLDER = re.compile(
    r"^(?:\\text\s*\{)?\s*(?:(?:your|the)\s+)?(?:final\s+)?(?:answer|number|result|value)"
    r"(?:\s+here)?\s*\}?$|^(?:\.\.\.|\\[lc]?dots|\?|_+)$", re.IGNORECASE)


def is_placeholder(content: str) -> bool:
    """`ANSWER`, `your answer`, `\\text{final answer}`, `...`: an instruction's stand-in."""
    return _PLACEHOLDER.match(content.strip()) is not None


def boxed_candidates(text: str) -> list[Candidate]:
    """Every outermost box, in order; a box nested inside another is part of it, and a
    placeholder box (`\\boxed{ANSWER}`) is none."""
    found: list[Candidate] = []
    position = 0
    while True:
        match = _BOX_COMMAND.search(text, position)
        if not match:
            return found
        close = _match_brace(text, match.end() - 1)
        if close is None:  # unclosed box: the model ran out of tokens; not an answer
            return found
        content = unwrap_boxes(text[match.end():close], braces=True).strip()
        if not is_placeholder(content):
            found.append(Candidate(content, match.start(), close + 1, "boxed"))
        position = close + 1


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
