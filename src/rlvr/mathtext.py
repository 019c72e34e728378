"""How math is written in text: the facts that the math verifier and the audit share.

Where a `\\boxed{}` or `\\fbox{}` is and what it holds, which `}` closes a `{`, which
characters and commands spell an operator, how LaTeX marks thousands, and the words
around a stated answer ("the answer *should be* 5", "he will *be* 13", "*Let's verify*:
..."). These are facts of LaTeX and of the language, not judgements: the verifier
(`verifiers/math/`) and the audit (`audit/`) must read them alike, or the audit's
second opinion would flag what it merely failed to read. What each does *with* them (a
placeholder box is no answer, a later statement conflicts with a box, an expression is
unevaluated, which statements count) stays in each: those are opinions, and the audit
keeps its own. The word tables are regex alternations for each reader's own patterns.

Standard library only. The functions are linear in the text's length for any input
(one scan per call; a nested box is unwrapped through one brace-matching pass), and
the patterns here cannot backtrack over their input: model text may be hostile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BOX_COMMAND = re.compile(r"\\(?:boxed|fbox)\s*\{")
# `\color{red}` colours what follows; `\textcolor{red}{x}` its group.
COLOR_COMMAND = re.compile(r"\\(?:textcolor|color)\s*\{[^{}]*\}")

# Unicode operator and relation signs, as the LaTeX (or ASCII) a math reader parses.
UNICODE_OPERATORS: dict[str, str] = {
    "\u00d7": "\\times",  # ×
    "\u22c5": "\\cdot",   # ⋅ dot operator
    "\u00b7": "\\cdot",   # · middle dot
    "\u2217": "*",        # ∗ asterisk operator
    "\u00f7": "\\div",    # ÷
    "\u2212": "-",        # − minus sign
    "\u2013": "-",        # – en dash, as models write a minus
    "\u2014": "-",        # — em dash, likewise
    "\u00b1": "\\pm",     # ±
    "\u2264": "\\le",     # ≤
    "\u2265": "\\ge",     # ≥
    "\u2260": "\\neq",    # ≠
}
# LaTeX commands of the four operations, as ASCII.
OPERATOR_COMMANDS: dict[str, str] = {"times": "*", "cdot": "*", "ast": "*", "div": "/"}
# The fraction commands that all mean `\frac` (display, text and continued styles).
FRACTION_COMMANDS = ("frac", "dfrac", "tfrac", "cfrac")
# LaTeX's thousands markup between digit groups: `1{,}000`, `1\,000`, `10,\!080`.
# (A plain comma may also separate list entries: each reader decides that itself.)
THOUSANDS_MARKUP = re.compile(r"(?<=\d)(?:\{,\}|\\,|,\\!|\\!,)\s*(?=\d{3}(?!\d))")
# The verbs that join "the answer" to the answer it states ("the answer is 5",
# "Answer = 5", "the final answer should be 5"), as a regex alternation.
ANSWER_VERBS = r"is|=|would\s+be|should\s+be|must\s+be|equals"
# The verbs after which a closing sentence states its value ("... equals 87.",
# "He will be 13."), as a regex alternation.
CLOSING_VERBS = "is|are|equals|be"
# A plain value as a closing statement writes it: `87`, `-3.5`, `1,000`, `2/3`.
PLAIN_VALUE = r"[-+]?\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+)?"
# The words that open a sentence checking an answer rather than stating one ("Verify:
# 2(5)+3=13.", "Let's double-check: ..."), as a regex alternation.
CHECK_OPENERS = (r"verify|verification|verifying|check|checking|double[- ]check(?:ing)?|"
                 r"sanity\s+check|proof|to\s+(?:verify|check|confirm)|let(?:'s|\s+us|\s+me)\s+"
                 r"(?:verify|check|confirm|double[- ]check)")

_ASCII_OPERATOR = {sign: OPERATOR_COMMANDS.get(latex.lstrip("\\"), latex)
                   for sign, latex in UNICODE_OPERATORS.items()
                   if OPERATOR_COMMANDS.get(latex.lstrip("\\"), latex) in ("*", "/", "-")}
# One alternation of fixed strings: each match is decided at its first character.
_OPERATOR_SPELLING = re.compile(
    r"\\(?P<command>" + "|".join(OPERATOR_COMMANDS) + r")(?![A-Za-z])"
    r"|(?P<sign>[" + "".join(_ASCII_OPERATOR) + "])")


def operators_as_ascii(text: str) -> str:
    """`6 \\times 75` -> `6 * 75`, `8 ÷ 2` -> `8 / 2`, `5 − 3` -> `5 - 3`: the four
    operations, however spelled, as ASCII (other signs are left alone)."""
    def ascii_of(match: re.Match[str]) -> str:
        command = match.group("command")
        return OPERATOR_COMMANDS[command] if command else _ASCII_OPERATOR[match.group("sign")]
    return _OPERATOR_SPELLING.sub(ascii_of, text)


def match_brace(text: str, open_index: int) -> int | None:
    """Index of the `}` closing the `{` at `open_index`, or None when it is unclosed.
    `\\{` and `\\}` are literal braces (of a set), not grouping."""
    depth, i = 0, open_index
    while i < len(text):
        char = text[i]
        if char == "\\":
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


def brace_pairs(text: str) -> dict[int, int]:
    """Index of each grouping `{` -> index of its `}`, in one pass (escapes skipped)."""
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


def unwrap_boxes(content: str, braces: bool = False) -> str:
    r"""`\boxed{\boxed{x}}` -> `x`: a box whose whole content is another box or a
    colour (`\color{red}{450}`, `\textcolor{red}{450}`, `\color{red} 450`), and with
    `braces` (a box's content) a brace group (`\boxed{{24}}`; elsewhere `{1,3}` may be a
    set written loosely, so it is kept). Linear in the length even for thousands of
    nested boxes (one brace-matching pass)."""
    pairs = brace_pairs(content)
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
        color = COLOR_COMMAND.match(content, start, end)
        if color:
            start, coloured = color.end(), True
            continue
        match = BOX_COMMAND.match(content, start, end)
        if not match or pairs.get(match.end() - 1) != end - 1:
            return content[start:end]
        start, end = match.end(), end - 1


@dataclass(frozen=True)
class Box:
    """One closed outermost box at [start, end); `content` is what it holds, nested
    boxes, colours and a brace group taken off, stripped."""

    content: str
    start: int
    end: int


def find_boxes(text: str) -> list[Box]:
    """Every closed outermost `\\boxed{}`/`\\fbox{}`, in order. A box nested inside
    another is part of it; the scan stops at an unclosed box (the model ran out of
    tokens: that box is no answer, and nothing after its `{` is outside it)."""
    found: list[Box] = []
    position = 0
    while (match := BOX_COMMAND.search(text, position)) is not None:
        close = match_brace(text, match.end() - 1)
        if close is None:
            break
        content = unwrap_boxes(text[match.end():close], braces=True).strip()
        found.append(Box(content, match.start(), close + 1))
        position = close + 1
    return found
