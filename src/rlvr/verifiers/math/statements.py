"""Answers committed to in words: "the answer is X", "the final result is **X**",
"Actually, X", "Correction: it's X", and a retraction that names its value and stops
("Actually no, X.", "No, X." opening a sentence) (method "statement"), and the value X each reads.
"La respuesta es X", "La réponse est X", "Die Antwort ist X" and "答案是 X" are the
same statements. "The result (solution) is X" is one too (method "result"), but one
that may name a step of the working, so a closing value after it supersedes it
(conflicts.py).

A statement is a commitment only when a value follows it: a math span, bold text, an
amount (`$18`), or a plain number that ends its clause ("is 500.", "is 24, not 23",
"is 500 dollars"; not the 6 of "is 6*75 = 450", which begins a calculation). "The
answer is correct", "the answer is not 6" and "the answer is \\boxed{5}" (the box is
the commitment) are none. Only the value is the candidate, so "The answer is 24, not
23." commits to 24 and the "not 23" after it is no second answer.
"""

from __future__ import annotations

import re

from rlvr.mathtext import ANSWER_VERBS, BOX_COMMAND
from rlvr.verifiers.math.extraction import Candidate
from rlvr.verifiers.math.spans import is_money

_STATEMENT = re.compile(
    r"\b(?:final\s+|correct\s+|right\s+|true\s+)?(?:answer|result|solution)\s*"
    rf"(?:{ANSWER_VERBS})\s*:?\s*"
    # a correction: "Actually, 500." / "Correction: it is 500" / "Actually no, 500."
    r"|\b(?:actually|correction|rather|instead)\b\s*[:,]?\s*(?P<no>no\b\s*[:,;!]?\s*)?"
    r"(?:(?:it|that)(?:'s|\s+is)\s+)?(?:the\s+answer\s+is\s+)?"
    # a retraction opening its sentence: "No, 500." / "No: it is 500."
    r"|(?:^|(?<=[.!?;]\s)|(?<=\n))(?P<bare_no>no\s*[:,;!]\s*)"
    r"(?:(?:it|that)(?:'s|\s+is)\s+)?(?:the\s+answer\s+is\s+)?"
    # the same statement in a few other languages models answer in
    r"|\b(?:la\s+)?respuesta\s+(?:final\s+|correcta\s+)?es\s*:?\s*"
    r"|\b(?:la\s+)?r[ée]ponse\s+(?:finale\s+|correcte\s+)?est\s*:?\s*"
    r"|\b(?:die\s+)?(?:endg[üu]ltige\s+)?antwort\s+(?:ist|lautet)\s*:?\s*"
    r"|答案\s*(?:是|为|為|:|：)\s*",
    re.IGNORECASE)
_STEP = re.compile(r"result|solution", re.IGNORECASE)
_NOT = re.compile(r"(?:not\b|n't\b|never\b|\\neq?)", re.IGNORECASE)
_NUMBER = r"[-+\u2212]?\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+)?"
_AMOUNT = re.compile(rf"\\?\$\s?(?P<money>{_NUMBER})")
# What can follow as a value: a math span, bold text, a plain number
_VALUE = re.compile(
    r"\$\$(?P<display>(?:\\.|[^$\\])+)\$\$"
    r"|\$(?P<dollar>(?:\\.|[^$\\\n])+)\$"
    r"|\\\((?P<paren>[^\n]+?)\\\)"
    r"|\\textbf\s*\{(?P<bold>[^{}]+)\}"
    r"|\*\*(?P<stars>[^*\n]+)\*\*"
    rf"|(?P<plain>{_NUMBER})(?=\s*(?:[.,;:!?)\u3002\uff0c\uff01\u4e00-\u9fff]|$)|\s+[A-Za-z])")
# `**$18$**`, `\textbf{\$18}.`: the value inside bold text
_WRAPPING = re.compile(r"^\s*(?:\\?\$|\\\()?\s*(?P<inner>.*?)\s*(?:\$|\\\))?\s*[.,]?\s*$")
# after a retraction's value: the end of its sentence ("No, 3." / "Actually no, $3$!")
_CLOSES = re.compile(r"\s*(?:[.!;\n]|$)")
VALUE_WINDOW = 200  # characters read after a statement for its value
MAX_STATEMENTS = 50  # statements read, from the end: only the last ones can be final


def _value(text: str, start: int) -> tuple[str, int] | None:
    """The value stated at `start` and where it ends, or None."""
    window = text[start:start + VALUE_WINDOW]
    amount = _AMOUNT.match(window)
    if amount and (window.startswith("\\") or is_money(window, 0, _next_dollar(window))):
        money = amount.group("money")
        return money.rstrip(","), start + amount.start("money") + len(money.rstrip(","))
    match = _VALUE.match(window)
    if match is None:
        return None
    name = next(k for k, v in match.groupdict().items() if v is not None)
    value = match.group(name).strip()
    if BOX_COMMAND.search(value):  # "the answer is $\boxed{5}$": the box is the commitment
        return None
    if name in ("bold", "stars"):
        value = _WRAPPING.match(value).group("inner")
    if name == "plain":  # "is 24, not 23": the comma closes the clause
        value = value.rstrip(",")
        return value, start + match.start(name) + len(value)
    return (value, start + match.end()) if value else None


def _next_dollar(window: str) -> int | None:
    """The `$` that would close a span opened at window[0] on its line, or None."""
    line = window.split("\n", 1)[0]
    close = line.find("$", 1)
    return close if close > 0 else None


def statement_candidates(text: str) -> list[Candidate]:
    """Every "the answer is X" whose X is a value, in order (see the module docstring)."""
    found = []
    for match in list(_STATEMENT.finditer(text))[-MAX_STATEMENTS:]:
        if _NOT.match(text, match.end()):
            continue
        value = _value(text, match.end())
        if value is not None and (match.group("no") or match.group("bare_no")) \
                and not _CLOSES.match(text, value[1]):
            continue  # "No, 3 is what adding gives": a retraction names its value and stops
        if value is not None:
            # "the result is 12" may name a step of the working; "the answer is" never does
            method = "result" if _STEP.search(match.group()) else "statement"
            found.append(Candidate(value[0], match.end(), value[1], method))
    return found
