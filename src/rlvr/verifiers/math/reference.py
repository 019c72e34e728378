"""Read a reference the way datasets write it into the gold answer string.

Datasets rarely store a bare answer. The gold is taken from:

- a number (AMC23 stores `27.0`): an integer-valued float is that integer, others
  their shortest decimal;
- a worked solution with the answer boxed (MATH and NuminaMath `solution` fields,
  AIME24 solutions: "... $7!\\times 2!=\\boxed{10,\\!080}$."): the final box. Boxes
  joined to it by nothing but spacing, commas or "and" (`$\\boxed{1}\\boxed{2}$`,
  `$\\boxed{1}$ and $\\boxed{2}$`) are one multi-valued gold, `1, 2`;
- a GSM8K solution ("... <<48+24=72>>72 clips.\\n#### 72"): what follows the last
  `####`;
- a final-answer line ("Final Answer: The final answer is $20$. I hope it is
  correct."): the answer it states;
- a reference escaped twice on its way into the dataset (`$-2 \\\\le x \\\\le 7$`,
  `\\\\boxed{...}`: every command with two backslashes, none with one) is first read
  with single backslashes. Only references: a completion is decoded text, and a model
  that writes `\\\\le` wrote a line break and "le";
- a number with a decimal comma (`1000,99`, `1,22`, `0,111`, `-0,5`: one comma with
  digits on both sides and no space, where it cannot be a thousands separator — the
  group after it is not three digits, or the whole part is 0): that decimal. MATH
  writes short lists without spaces but with a sign (`-2,1`, `1,-2`: MATH-500), so a
  signed one stays a list unless its whole part is 0; `1,000` is one thousand and
  `1, 22` a list (normalize.py, structure.py);
- anything else: the text itself (`$9$`, `\\(9\\)`, `$$\\frac13$$`; normalize.py drops
  the math delimiters).

A reference with no such answer in it (`\\boxed{}`, `#### `) is an invalid reference,
raised by the verifier when the gold reads as empty.
"""

from __future__ import annotations

import math
import re
from typing import Any

from rlvr.verifiers.base import InvalidReference
from rlvr.verifiers.math.extraction import Candidate, answer_candidates, boxed_candidates

# What may sit between two boxes of one multi-valued gold: `$\boxed{1}$, $\boxed{2}$`,
# `\boxed{1} \text{ and } \boxed{2}`. Not "or": between boxes MATH uses it for the
# same answer written twice ("$\boxed{15\frac{39}{40}},$ or $\boxed{\frac{639}{40}}$
# inches", MATH-500 number_theory/459), where the last box is the gold.
_BOX_GLUE = re.compile(r"^(?:[\s$,;]|\\[(\)\[\]]|\\quad|\\qquad|\\text\s*\{\s*and\s*\}"
                       r"|\band\b)*$")
_GSM8K_ANSWER = re.compile(r"####\s*([^\n]*)")
_DECIMAL_COMMA = re.compile(r"^\$*\s*(?P<sign>-?)(?P<whole>\d+),(?P<frac>\d+)\s*\$*$")
_SINGLE_COMMAND = re.compile(r"(?<!\\)\\[a-zA-Z]")
_DOUBLED_COMMAND = re.compile(r"(?<!\\)\\\\[a-zA-Z{}]")


def _number_text(reference: float) -> str:
    if not math.isfinite(reference):
        raise InvalidReference(f"math: reference is not a finite number: {reference!r}")
    return str(int(reference)) if reference.is_integer() else repr(reference)


def _final_boxes(text: str, boxes: list[Candidate]) -> str:
    """The last box, and those before it joined only by `_BOX_GLUE`, as one list."""
    group = [boxes[-1]]
    for previous in reversed(boxes[:-1]):
        if not _BOX_GLUE.match(text[previous.end:group[0].start]):
            break
        group.insert(0, previous)
    return ", ".join(box.text for box in group)


def _undouble_backslashes(text: str) -> str:
    """`-2 \\\\le x \\\\le 7` -> `-2 \\le x \\le 7` when no command has a single backslash
    (so `\\begin{pmatrix} x \\\\ y \\end{pmatrix}`, a row break before `y`, stays)."""
    if _DOUBLED_COMMAND.search(text) and not _SINGLE_COMMAND.search(text):
        return text.replace("\\\\", "\\")
    return text


def _decimal_comma(text: str) -> str:
    """`1000,99` -> `1000.99`, `-2,1` -> `-2, 1` (see the module docstring); any other
    text unchanged. The gold's reading is decided here, the answer's by the gold's."""
    match = _DECIMAL_COMMA.match(text)
    if not match:
        return text
    zero_whole = match.group("whole") == "0"
    if zero_whole or (not match.group("sign") and len(match.group("frac")) != 3):
        return f"{match.group('sign')}{match.group('whole')}.{match.group('frac')}"
    if match.group("sign"):  # a list (`-2,1`), spelled so that structure.py reads one
        return f"-{match.group('whole')}, {match.group('frac')}"
    return text  # `1,000`: one thousand (normalize.py)


def gold_text(reference: Any) -> str:
    """The gold answer in `reference` (see the module docstring), stripped."""
    if isinstance(reference, bool) or not isinstance(reference, (str, int, float)):
        raise InvalidReference("math: reference must be the gold answer as a string (or a "
                               f"number), got {type(reference).__name__}")
    if isinstance(reference, float):
        return _number_text(reference)
    text = _undouble_backslashes(str(reference).strip())
    if not text:
        raise InvalidReference("math: reference (gold answer) is empty")
    return _decimal_comma(_stated_gold(text))


def _stated_gold(text: str) -> str:
    """The answer a reference text states: its final boxes, `####` or marker, or itself."""
    boxes = boxed_candidates(text)
    if boxes:
        return _final_boxes(text, boxes).strip()
    gsm8k = _GSM8K_ANSWER.findall(text)
    if gsm8k:
        return gsm8k[-1].strip()
    markers = answer_candidates(text)
    if markers:
        return markers[-1].text.strip()
    return text
