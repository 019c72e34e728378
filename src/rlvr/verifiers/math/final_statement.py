"""The answer stated in a completion's closing sentence (the answer when there is no
box or marker; after one, conflicts.py decides whether it is a new commitment): its
math in delimiters ("Therefore $x \\geq 5$ is the solution.", "The
identity matrix is $\\begin{pmatrix}1&0\\\\0&1\\end{pmatrix}$.", "so the total is $34$."),
a plain value it ends on ("Therefore, the probability that Alice wins is 2/3.", "17 + 5
= 22."), or the one number of a plain closing sentence ("Tom has 24 apples left.").

Why only there, and only so: a number anywhere in the reasoning is not an answer (a
stray `$12$` mid-way must not score; the last-number fallback stays opt-in), but a
closing sentence whose math is the last thing said states the result the way people
and datasets write it. What may follow the last span is only a few plain words ("is
the solution.", "is our answer."): no digits, no further math. Every span of that
sentence is a candidate, so `$2$ or $3$` still reaches the hedging checks as two
answers, and "is not $5$." as a negation. A span that the words before it take as an
operand ("90 degrees multiplied by $\\frac{\\pi}{2}$.", "3 times $x$.", "half of $8$.") is no
result: the sentence's result is something else, so it is not read. A plain value counts right after
"is"/"are"/"equals"/"=" at the very end ("is 19 points.", "17 + 5 = 22.") and, in a
plain sentence, when it is the sentence's only number, the sentence ends with a full
stop and denies nothing ("Tom has 24 apples left."; not "so it is 5 then we go on",
"The answer is not 5.", "It is 23 or it is 24." — the last is a hedge, hedging.py).

A justification is never the answer: a closing "Verify: 2(5)+3=13." or "Check: ..."
sentence, or a "since ..."/"because ..." clause, is cut before reading
(`So the answer is $2$, since $2^2=4$.` states 2; `x = 5. Verify: 2(5)+3=13.` states 5).
"""

from __future__ import annotations

import bisect
import re

from rlvr.mathtext import CHECK_OPENERS, CLOSING_VERBS, PLAIN_VALUE, operators_as_ascii
from rlvr.verifiers.math.extraction import Candidate
from rlvr.verifiers.math.spans import Span, math_spans

# After the last span: "is the solution.", ", our answer!", ".", "" — a few words and
# the closing punctuation, never another sentence.
_CLOSING = re.compile(r"^[\s,;:)*]*(?:[A-Za-z']+[\s,;:)*]*){0,8}[\s.!*]*$")  # a question is no statement
# A sentence ends at ". ", "! ", "? " before a capital, or at a blank line.
_SENTENCE_END = re.compile(r"[.!?]\s+(?=[A-Z])|\n\s*\n")
_LINE_END = re.compile(r"[.!?]\s+(?=[A-Z])|\n")
_CLOSING_VALUE = re.compile(rf"(?:\b(?:{CLOSING_VERBS})\s+|(?P<equals>=)\s*)(?P<value>{PLAIN_VALUE})"
                            r"(?:\s+[A-Za-z]+){0,2}\s*[.!]?\s*$")
# A closing sentence that checks the answer rather than states it.
_CHECK_SENTENCE = re.compile(rf"\W*(?:{CHECK_OPENERS})\b", re.IGNORECASE)
# Words or signs that take the next quantity as an operand, right before a span.
_OPERAND_BEFORE = re.compile(
    r"(?:\b(?:times|multiplied\s+by|divided\s+by|plus|minus|over|add(?:ed)?\s+to|"
    r"subtract(?:ed)?\s+from|of|sum\s+of|product\s+of)|[*+/^-])\s*\$*$",
    re.IGNORECASE)
_BECAUSE = re.compile(r",?\s+(?:since|because)\b", re.IGNORECASE)
_PLAIN_NUMBER = re.compile(r"(?<![\w.])\\?\$?[-+\u2212]?\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+)?(?![\w])")
_DENIAL = re.compile(r"\b(?:not|never|no)\b|n't\b|\?|\\neq?", re.IGNORECASE)
_PLAIN_SENTENCE = re.compile(r"^[A-Z][^\n]{0,300}?[.!]\**\s*$")


def final_statement_candidates(text: str) -> list[Candidate]:
    """The math spans of the closing sentence, when the last of them ends the text;
    else the plain value the text ends on ("... is 2/3."); else the one number of a
    plain closing sentence. The text is read before a closing justification: before a
    closing "since"/"because" clause when that leaves a reading ("The average is 80
    because 240 / 3 = 80."), else only before closing check sentences ("He will be 13
    because 12 + 1 = 13" states its value in the clause)."""
    spans = math_spans(text)
    checked = _before_checks(text, spans)
    clause = _before_clause(text, spans, checked)
    return _read(text, spans, clause) or (_read(text, spans, checked) if clause < checked else [])


def _read(text: str, spans: list[Span], end: int) -> list[Candidate]:
    """The closing reading of text[:end]."""
    spans = [s for s in spans if s.end <= end]
    body = text[:end]
    if spans and _CLOSING.match(body[spans[-1].end:]) and not _is_operand(body, spans[-1]):
        start = _sentence_start(body, spans)
        return [Candidate(span.content(body).strip(), span.start, span.end, "final_math")
                for span in spans if span.start >= start]
    value = _CLOSING_VALUE.search(body, max(0, len(body) - 300))
    if value is not None:
        method = "final_equals" if value.group("equals") else "final_value"
        return [Candidate(value.group("value"), value.start("value"), value.end("value"), method)]
    return _plain_sentence(body, spans)


def _is_operand(text: str, span: Span) -> bool:
    """Whether the words just before `span` make it an operand of an operation the
    sentence states ("90 degrees multiplied by $\\frac{\\pi}{2}$.", "3 times $x$.",
    "half of $8$."): the sentence's result is then something else, never the span
    (a policy learned to end on the gold as a factor of a wrong product)."""
    # (the signs as ASCII first: `\\times`, `×` and `·` are all `*`, mathtext)
    return bool(_OPERAND_BEFORE.search(operators_as_ascii(text[max(0, span.start - 40):
                                                              span.start])))


def _before_checks(text: str, spans: list[Span]) -> int:
    """Where the text ends before its closing "Verify: ..."/"Check: ..." sentences (a
    line is a sentence here). A text that is nothing but a check states no answer: what
    comes before a check must not decide whether the check is read."""
    end = len(text)
    for _ in range(3):  # "x = 5. Verify: ... Check: ...": a few checks in a row
        start = _sentence_start(text[:end], [s for s in spans if s.end <= end], last=True)
        if not _CHECK_SENTENCE.match(text, start, end):
            break
        end = start
    return end


def _before_clause(text: str, spans: list[Span], end: int) -> int:
    """Where text[:end] ends before a "since"/"because" clause of its last sentence
    that follows the sentence's main clause ("Since ..., she used 42" keeps its answer)."""
    start = _sentence_start(text[:end], [s for s in spans if s.end <= end], last=True)
    starts = [s.start for s in spans]
    for clause in _BECAUSE.finditer(text, start, end):
        at = bisect.bisect_right(starts, clause.start()) - 1  # the span that may hold it
        if (at < 0 or spans[at].end <= clause.start()) and text[start:clause.start()].strip():
            return clause.start()
    return end


def _sentence_start(text: str, spans: list[Span], last: bool = False) -> int:
    """Where the sentence holding the last span (with `last` or without spans: the
    text's last sentence, where a line break ends a sentence too) begins: the last
    sentence end before it that lies outside every span (`$3. 5$` ends no sentence).
    One pass over sentence ends and spans together (both are in order)."""
    stop = len(text.rstrip()) if last or not spans else spans[-1].start
    ends = _LINE_END if last else _SENTENCE_END
    start, k = 0, 0
    for end in ends.finditer(text, 0, max(0, stop - 1)):
        while k < len(spans) and spans[k].end <= end.start():
            k += 1
        if k < len(spans) and spans[k].start <= end.start():
            continue  # inside a span
        start = end.end()
    return start


def _plain_sentence(text: str, spans: list[Span]) -> list[Candidate]:
    """The one number of a plain closing sentence (see the module docstring)."""
    start = _sentence_start(text, spans, last=True)
    if spans and spans[-1].end > start:
        return []
    sentence = text[start:]
    if not _PLAIN_SENTENCE.match(sentence.strip()) or _DENIAL.search(sentence):
        return []
    numbers = list(_PLAIN_NUMBER.finditer(text, start))
    if len(numbers) != 1:
        return []
    match = numbers[0]
    value = match.group().lstrip("\\$").rstrip(",")
    return [Candidate(value, match.start(), match.end(), "final_sentence")]
