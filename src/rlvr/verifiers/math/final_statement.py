"""The answer stated in a completion's closing sentence, when there is no box and no
answer marker: its math in delimiters ("Therefore $x \\geq 5$ is the solution.", "The
identity matrix is $\\begin{pmatrix}1&0\\\\0&1\\end{pmatrix}$.", "so the total is $34$."),
or a plain value it ends on ("Therefore, the probability that Alice wins is 2/3.").

Why only there, and only in delimiters: a number anywhere in the reasoning is not an
answer (a stray `$12$` mid-way must not score; the last-number fallback stays opt-in),
but a closing sentence whose math is the last thing said states the result the way
people and datasets write it. What may follow the last span is only a few plain words
("is the solution.", "is our answer."): no digits, no further math. Every span of that
sentence is a candidate, so `$2$ or $3$` still reaches the hedging checks as two
answers, and "is not $5$." as a negation. A plain value counts only right after
"is"/"are"/"equals"/"=" at the very end ("is 19 points.", "17 + 5 = 22."), never a
number mid-sentence.
"""

from __future__ import annotations

import re

from rlvr.verifiers.math.extraction import Candidate

# Display math may run over lines; inline math (`$..$`, `\\(..\\)`) stays on one line, as
# LaTeX writers keep it (a `$` opening on one line and closing lines later is more
# likely two stray dollars than one formula).
_SPAN = re.compile(r"\$\$(?P<display>(?:\\.|[^$\\])+?)\$\$|\$(?P<inline>(?:\\.|[^$\\\n])+?)\$"
                   r"|\\\[(?P<bracket>(?:.|\n)+?)\\\]|\\\((?P<paren>.+?)\\\)")
# After the last span: "is the solution.", ", our answer!", ".", "" — a few words and
# the closing punctuation, never another sentence.
_CLOSING = re.compile(r"^[\s,;:)*]*(?:[A-Za-z']+[\s,;:)*]*){0,8}[\s.!*]*$")  # a question is no statement
# A sentence ends at ". ", "! ", "? " before a capital, or at a blank line.
_SENTENCE_END = re.compile(r"[.!?]\s+(?=[A-Z])|\n\s*\n")
_CLOSING_VALUE = re.compile(r"(?:\b(?:is|are|equals|be)\s+|=\s*)(?P<value>[-+]?\d[\d,]*(?:\.\d+)?"
                            r"(?:\s*/\s*\d+)?)(?:\s+[A-Za-z]+){0,2}\s*[.!]?\s*$")
MAX_TEXT = 100_000  # characters searched from the end; a completion is shorter


def final_statement_candidates(text: str) -> list[Candidate]:
    """The math spans of the closing sentence, when the last of them ends the text;
    else the plain value the text ends on ("... is 2/3.")."""
    offset = max(0, len(text) - MAX_TEXT)
    spans = list(_SPAN.finditer(text, offset))
    if not spans or not _CLOSING.match(text[spans[-1].end():]):
        value = _CLOSING_VALUE.search(text, max(0, len(text) - 300))
        if value is None:
            return []
        return [Candidate(value.group("value"), value.start("value"), value.end("value"),
                          "final_value")]
    sentence_start = _sentence_start(text, spans)
    return [Candidate(next(g for g in span.groups() if g is not None).strip(), span.start(),
                      span.end(), "final_math")
            for span in spans if span.start() >= sentence_start]


def _sentence_start(text: str, spans: list[re.Match[str]]) -> int:
    """Where the sentence holding the last span begins: the last sentence end before
    it that lies outside every span (`$3. 5$` does not end a sentence)."""
    start = 0
    inside = [(s.start(), s.end()) for s in spans]
    for end in _SENTENCE_END.finditer(text, 0, spans[-1].start()):
        if not any(a <= end.start() < b for a, b in inside):
            start = end.end()
    return start
