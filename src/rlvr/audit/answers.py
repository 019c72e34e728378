"""Where a completion states answers: every `\\boxed{}`, every "the answer is X" /
"Answer: X" / "#### X" statement, and a bold number that ends the text.

The audit's own reading, independent of the math verifier's extraction: it looks for
what the verifier may have missed, in particular a statement *after* the box that
says something else (`\\boxed{6 * 75} ... So the answer is \\textbf{8100}.`). Where
the boxes are and the verbs of a closing statement are facts both read alike
(rlvr.mathtext); which statements count, and what conflicts, is the audit's own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rlvr.mathtext import (ANSWER_VERBS, BOX_COMMAND, CHECK_OPENERS, CLOSING_VERBS,
                           PLAIN_VALUE, find_boxes)

# "the answer is", "final answer:", "Answer =", "the result should be", "####"; the
# stated text runs to the line end.
_MARKER = re.compile(rf"####|\b(?:final\s+)?(?:answer|result)\s*(?:(?:{ANSWER_VERBS})\s*:?|:)",
                     re.IGNORECASE)
# What a response says when it takes back its answer: a later value corrects the box.
_CORRECTION = re.compile(r"\b(?:actually|correction|wait|mistake|wrong|oops|instead)\b",
                         re.IGNORECASE)
# "Actually no, X." and a sentence opening "No, X." take back and name X only when X
# ends the sentence ("No, 3 is what adding gives" is about 3, not an answer).
_CORRECTED_TO = re.compile(r"(?:\b(?:actually|correction)\b\s*[:,]?\s*(?P<no>no\b\s*[:,;!]?\s*)?"
                           r"|(?:^|(?<=[.!?;]\s)|(?<=\n))(?P<bare_no>no\s*[:,;!]\s*))"
                           r"(?:it'?s\s+|it\s+is\s+)?", re.IGNORECASE | re.MULTILINE)
_ONLY_VALUE_CLOSES = re.compile(r"^\$?[-+]?[\d.,]*\d\$?\s*[.!]?\s*$")
# A bold number with only closing punctuation after it: "... is **8100**." at the end.
_FINAL_BOLD = re.compile(r"(?:\\textbf\{|\\mathbf\{|\*\*)\s*\$?([-+]?[\d.,]*\d)\$?\s*(?:\}|\*\*)"
                         r"[\s.!$)\]]*$")
_BOLD_MARKUP = re.compile(r"\*\*([^*\n]+)\*\*")
_LEADING_VALUE = re.compile(r"[-+(]?\s*[\d.,]*\d[\d.,\s+\-*/^()]*")


@dataclass(frozen=True)
class Statement:
    """One stated answer: `text` at [start, end) of the completion."""

    text: str
    start: int
    end: int
    kind: str  # "boxed" | "marker" | "bold"


def boxes(completion: str) -> list[Statement]:
    """Every closed outermost box, in order (an unclosed box is no answer); nested
    boxes, colours and a brace group around the content are taken off."""
    return [Statement(box.content, box.start, box.end, "boxed")
            for box in find_boxes(completion)]


def marker_statements(completion: str) -> list[Statement]:
    """Each "answer is X" / "Answer: X" / "#### X", X read up to the line end (markdown
    bold taken off: "**24**." is 24); a statement whose X is itself a box is left to
    `boxes`."""
    found = []
    for match in _MARKER.finditer(completion):
        line_end = completion.find("\n", match.end())
        line_end = len(completion) if line_end < 0 else line_end
        text = _BOLD_MARKUP.sub(r"\1", completion[match.end():line_end]).strip()
        if not text or BOX_COMMAND.match(text):
            continue
        found.append(Statement(text, match.start(), line_end, "marker"))
    return found


def final_bold(completion: str) -> Statement | None:
    match = _FINAL_BOLD.search(completion)
    if not match:
        return None
    return Statement(match.group(1), match.start(), match.end(), "bold")


def leading_value(text: str) -> str | None:
    """The number or arithmetic a statement opens with ("500." -> "500", "$450$ apples"
    -> "450"), or None when it opens with words ("the answer is not 500", "as above")."""
    text = re.sub(r"^(?:\$|\\\(|\\textbf\{|\\mathbf\{|\*\*|\s)+", "", text)
    match = _LEADING_VALUE.match(text)
    if not match:
        return None
    value = match.group(0).strip().rstrip(".,").strip()
    return value or None


# A text that ends on a value after its verb: "84 + 3 equals 87.", "So the total is
# $34$ apples." (the math verifier reads such a closing statement too; a number in the
# middle of the text is still no stated answer).
# ("\b=" never matched after a space: "=" is no word character, hence its own branch.)
_CLOSING_VALUE = re.compile(rf"(?:\b(?:{CLOSING_VERBS})\s+|=\s*)\$?(?P<value>{PLAIN_VALUE})\$?"
                            r"(?:\s+[A-Za-z]+){0,2}\s*[.!]?\s*$")


# A closing sentence that checks the answer ("Verify: 2(5)+3=13.") states none.
_CHECK_TAIL = re.compile(rf"(?:(?<=[.!?])[ \t]+|\n\s*)(?:{CHECK_OPENERS})\b[^\n]*$",
                         re.IGNORECASE)
# A plain closing sentence with one number: "Tom has 24 apples left."
_LAST_SENTENCE = re.compile(r"(?:^|(?<=[.!?])\s+|\n)(?P<sentence>[A-Z][^\n.!?]{0,300}[.!])\s*$")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?![\w])")
_DENIAL = re.compile(r"\b(?:not|never|no)\b|n't\b", re.IGNORECASE)


def closing_value(completion: str) -> Statement | None:
    """A value the text ends on after its verb or `=`, else the one number of a plain
    closing sentence; a closing check sentence is left out first."""
    window = max(0, len(completion) - 300)
    check = _CHECK_TAIL.search(completion, window)
    end = check.start() if check and completion[:check.start()].strip() else len(completion)
    match = _CLOSING_VALUE.search(completion[:end], window)
    if match:
        return Statement(match.group("value"), match.start("value"), match.end("value"),
                         "closing")
    sentence = _LAST_SENTENCE.search(completion[:end], window)
    if sentence is None or _DENIAL.search(sentence.group("sentence")):
        return None
    numbers = list(_NUMBER.finditer(completion, sentence.start("sentence"), end))
    if len(numbers) != 1:
        return None
    number = numbers[0]
    return Statement(number.group().rstrip(","), number.start(), number.end(), "closing")


# A completion that is nothing but a number ("8", "$-3.5$.").
_ONLY_VALUE = re.compile(rf"\s*\$?(?P<value>{PLAIN_VALUE})\$?\.?\s*")
# "This answer is correct, ...": a marker followed by a word states no value.
_OPENS_WITH_WORD = re.compile(r"[A-Za-z]{2,}")


def final_answer(completion: str) -> Statement | None:
    """What a strict reader takes as the answer: the last box, else the last marker
    statement that opens with a value or math (not "answer is correct"), else a value
    the text ends on ("... equals 87."), else the whole text when it is only a number;
    else None (a bare number somewhere in the text is not a stated answer)."""
    found = boxes(completion)
    if found:
        return found[-1]
    markers = [m for m in marker_statements(completion) if not _OPENS_WITH_WORD.match(m.text)]
    if markers:
        return markers[-1]
    closing = closing_value(completion)
    if closing is not None:
        return closing
    only = _ONLY_VALUE.fullmatch(completion)
    return Statement(only.group("value"), only.start("value"), only.end("value"), "whole") \
        if only else None


def last_commitment(completion: str) -> Statement | None:
    """The last answer the completion commits to, by position: a box, a marker
    statement or a correction ("Actually, 500.") that opens with a value (read as that
    value), a closing bold number, or a value the text ends on when the text after the
    last box takes that box back ("Wait: 17 - 15 = 2."). A later one supersedes an
    earlier box (the response corrected itself)."""
    found = boxes(completion)
    stated = list(found)
    for marker in marker_statements(completion) + _corrections(completion):
        value = leading_value(marker.text)
        if value is not None:
            stated.append(Statement(value, marker.start, marker.end, "marker"))
    bold = final_bold(completion)
    if bold is not None:
        stated.append(bold)
    closing = closing_value(completion)
    after = found[-1].end if found else 0
    if closing is not None and _CORRECTION.search(completion, after, closing.start):
        stated.append(Statement(closing.text, closing.start, closing.end, "marker"))
    return max(stated, key=lambda s: s.start) if stated else None


def _corrections(completion: str) -> list[Statement]:
    """Each "Actually, X" / "Correction: X" / "Actually no, X." / "No, X.", X read up to
    the line end."""
    found = []
    for match in _CORRECTED_TO.finditer(completion):
        line_end = completion.find("\n", match.end())
        line_end = len(completion) if line_end < 0 else line_end
        text = completion[match.end():line_end].strip()
        if (match.group("no") or match.group("bare_no")) and not _ONLY_VALUE_CLOSES.match(text):
            continue
        found.append(Statement(text, match.start(), line_end, "marker"))
    return found


def statements_after(completion: str, position: int) -> list[Statement]:
    """Answers stated after `position` (later boxes, markers, a closing bold number)."""
    later = [s for s in boxes(completion) + marker_statements(completion) if s.start >= position]
    bold = final_bold(completion)
    if bold and bold.start >= position:
        later.append(bold)
    return sorted(later, key=lambda s: s.start)
