"""Answers that try to win by saying several things: each scores 0 as "hedged".

- several different answers in the final position (`\\boxed{2} or \\boxed{3}`,
  `\\boxed{2}\\n\\boxed{3}`), or many different boxed answers anywhere (spamming);
- an alternative inside the answer (`2 \\text{ or } 3`, `2 \\lor 3`);
- a negated answer ("the answer is not \\boxed{5}", `\\boxed{\\neq 5}`);
- another value offered beside the final answer in its own sentence (`It is 23 or it
  is 24.`, `\\boxed{24} (or possibly 23)`, `Maybe 23, maybe 24`): two or more
  candidates given together as the final answer, boxed or not. A restatement in other
  units is no alternative (`$18 a day, or $126 a week`: each value has its own unit
  words, and the first one stated is the answer).

A correction is not a hedge (the final answer is the last one committed to,
final_answer.py): "I got \\boxed{3}. Wait, that is wrong: \\boxed{2}" ends on one answer,
because the text between the two boxes is more than connecting words.
Several values where the gold is one value (`\\{2, 3\\}` for gold 2) are judged in
verifier.py, which knows the gold's shape.
"""

from __future__ import annotations

import re
from typing import Callable

from rlvr.verifiers.math.extraction import Candidate

SPAM_DISTINCT_BOXES = 4  # this many different boxed answers in one completion is spam

# Glue between two answers that joins them into one final statement.
_CONNECTING = re.compile(
    r"\\quad|\\qquad|\\text\s*\{|\\textbf\s*\{|\\\(|\\\)|\\\[|\\\]|[\s$,;:/.&{}()*\\-]"
    r"|\b(?:or|and|either|maybe|possibly|perhaps|alternatively|also|otherwise|equivalently)\b",
    re.IGNORECASE)
_ALTERNATIVE = re.compile(
    r"\\text\s*\{\s*or\s*\}|\bor\b|\\lor(?![a-zA-Z])|\\vee(?![a-zA-Z])|\beither\b|\\text\s*\{\s*and/or",
    re.IGNORECASE)
# Negation right before the answer: "is not", "isn't", "never", "\neq", "≠".
_NEGATION_BEFORE = re.compile(
    r"(?:\bnot|\bcannot|n't|\bnever|\\neq?|\u2260)\s*(?:equal(?:s)?\s*(?:to)?|be)?\s*[:=]?\s*[$(\\\[]*\s*$",
    re.IGNORECASE)
_NEGATION_INSIDE = re.compile(r"^\s*(?:\\neq?(?![a-zA-Z])|\u2260|not\b|\\text\s*\{\s*not\b)",
                              re.IGNORECASE)
_NEGATION_WINDOW = 40


def _squash(text: str) -> str:
    return "".join(text.split())


def final_group(text: str, candidates: list[Candidate]) -> list[Candidate]:
    """The last candidate and those before it joined to it by connecting words only.
    A marker after a box (`\\boxed{450}\n#### 500`) is a later commitment, not part
    of the box's statement: it supersedes the box (final_answer.py)."""
    group = [candidates[-1]]
    for previous in reversed(candidates[:-1]):
        glue = text[previous.end:group[0].start]
        if previous.end > group[0].start or _CONNECTING.sub("", glue) \
                or (previous.method == "boxed" and group[0].method != "boxed"):
            break
        group.insert(0, previous)
    return group


def hedge_reason(text: str, candidates: list[Candidate], group: list[Candidate],
                 alternatives_allowed: bool = False, gold_values: int = 1,
                 same_answer: Callable[[str, str], bool] | None = None) -> str | None:
    """Why the final answer is a hedge ("several_answers", "alternative", "negated",
    "spamming"), or None. `group` is `final_group(...)` after the caller merged it
    (a multi-valued gold may legitimately box each value); `alternatives_allowed` for
    such a gold too, where "x = 1 or x = 2" states the solution set; `gold_values`
    raises the spam threshold for a gold with that many values; `same_answer(a, b)`
    tells equal answers written differently apart from different ones."""
    boxed = {_squash(c.text) for c in candidates if c.method == "boxed"}
    if len(boxed) >= SPAM_DISTINCT_BOXES + gold_values - 1:  # a gold of 5 values may box 5
        return "spamming"  # first: cheap, and it bounds the value checks below
    written = {_squash(c.text) for c in group}
    if len(written) > 1:
        # `\boxed{2} or \boxed{\frac42}` says one thing twice; different values hedge
        if same_answer is None or len(written) >= SPAM_DISTINCT_BOXES \
                or not all(same_answer(c.text, group[-1].text) for c in group):
            return "several_answers"
    final = group[-1]
    if not alternatives_allowed and _ALTERNATIVE.search(final.text):
        return "alternative"
    before = text[max(0, group[0].start - _NEGATION_WINDOW):group[0].start]
    if _NEGATION_BEFORE.search(before) or _NEGATION_INSIDE.search(final.text):
        return "negated"
    if not alternatives_allowed and offered_alternative(text, group[0].start, final.end,
                                                         final.text, same_answer):
        return "alternative"
    return None


_SENTENCE_BREAK = re.compile(r"[.!?](?=\s|$)|\n")
_ALTERNATIVE_WORD = (r"(?:\b(?:or|maybe|perhaps|possibly|alternatively|otherwise|"
                     r"o(?!')|ou|oder|quiz[áa]s|vielleicht)\b|或)")  # and in other languages
_OTHER_VALUE = (r"(?:\\boxed\s*\{|\\?\$)?\s*(?P<value>[-+\u2212]?\d[\d,]*(?:\.\d+)?"
                r"(?:\s*/\s*\d+)?)(?P<percent>\s*(?:\\?%|percent\b))?\$?\}?"
                r"(?P<unit>(?:\s+[A-Za-z]+){0,3})")
# after the final answer: "or possibly 23", "(or 23)", "or maybe it is 23 apples"
_WORD_THEN_VALUE = re.compile(rf"{_ALTERNATIVE_WORD}[\s,:(]*(?P<words>(?:[A-Za-z']+\s+){{0,3}})"
                              rf"(?P<approx>\\approx\s*|\u2248\s*)?{_OTHER_VALUE}", re.IGNORECASE)
# "or about 0.33", "or roughly 33%": the same amount rounded, no second answer
_APPROXIMATELY = re.compile(r"\b(?:about|approximately|approx|roughly|around|nearly|"
                            r"equivalently|i\.?e)\b", re.IGNORECASE)
# before it, right up to it: "23 or it is", "Maybe 23, maybe", "Maybe 23 or"
_BEFORE_FINAL = (
    re.compile(rf"{_OTHER_VALUE}[\s,;).]*{_ALTERNATIVE_WORD}", re.IGNORECASE),
    re.compile(rf"\b(?:maybe|perhaps|possibly)\b[\s,]*{_OTHER_VALUE}[\s,;)]*", re.IGNORECASE))
_GLUE_TO_FINAL = re.compile(r"[\s,:(.]*(?:[A-Za-z']+[\s,:(]+){0,4}[\s$(\\]*$")
# From the final answer to the alternative word after it: "\\boxed{24} (", ", ", " a
# day, " (not "has a remainder of 1 when divided by 2, 3, 4, or 6": another clause)
_GLUE_FROM_FINAL = re.compile(r"[\s,;:)(*$}.!?]*(?:[A-Za-z']+[\s,;:)(*$}.]*){0,3}")
# A sentence that opens with a hedge word belongs to the answer's: "\\boxed{24}. Maybe 23."
_HEDGE_OPENING = re.compile(r"[\s.!?*(]*(?:maybe|perhaps|possibly|or|alternatively)\b",
                            re.IGNORECASE)
_STOP_WORDS = {"or", "maybe", "perhaps", "possibly", "alternatively", "otherwise", "it",
               "is", "and", "so", "the", "answer", "that"}
SENTENCE_WINDOW = 300  # characters searched either side of the final answer


def _unit(words: str) -> str:
    """The unit words after a value ("a day", "apples"), without hedging words."""
    kept = []
    for word in words.lower().split():
        if word in _STOP_WORDS:
            break
        kept.append(word)
    return " ".join(kept)


def _hedge_window(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence holding text[start:end], with the sentences next to it that open
    with a hedge word ("Maybe 23. Maybe 24.", "\\boxed{24}. Or possibly 23.")."""
    breaks = list(_SENTENCE_BREAK.finditer(text, max(0, start - SENTENCE_WINDOW), start))
    left = breaks[-1].end() if breaks else max(0, start - SENTENCE_WINDOW)
    if breaks:
        previous = breaks[-2].end() if len(breaks) > 1 else max(0, start - SENTENCE_WINDOW)
        if _HEDGE_OPENING.match(text, left) or _HEDGE_OPENING.match(text, previous):
            left = previous
    after = _SENTENCE_BREAK.search(text, end, end + SENTENCE_WINDOW)
    right = after.start() if after else min(len(text), end + SENTENCE_WINDOW)
    if after and _HEDGE_OPENING.match(text, after.end()):
        later = _SENTENCE_BREAK.search(text, after.end(), after.end() + SENTENCE_WINDOW)
        right = later.start() if later else min(len(text), after.end() + SENTENCE_WINDOW)
    return left, right


def offered_alternative(text: str, start: int, end: int, final: str,
                        same_answer: Callable[[str, str], bool] | None) -> bool:
    """Whether the sentence holding the final answer, text[start:end], offers another
    value with it: a value and an alternative word right before the answer or right
    after it, the value not the final answer's own, and not the same amount in other
    units."""
    left, right = _hedge_window(text, start, end)
    own_unit = _unit(re.match(r"[$}\s]*((?:[A-Za-z]+\s*){0,3})", text[end:right]).group(1))
    offered = [m for pattern in _BEFORE_FINAL for m in pattern.finditer(text, left, start)
               if _GLUE_TO_FINAL.match(text, m.end(), start)]
    offered += [m for m in _WORD_THEN_VALUE.finditer(text, end, right)
                if _GLUE_FROM_FINAL.fullmatch(text, end, m.start())]
    for match in offered:
        value = match.group("value")
        if match.re is _WORD_THEN_VALUE and (match.group("approx") or
                                              _APPROXIMATELY.search(match.group("words"))):
            continue
        if match.group("percent"):  # "\\frac14, or 25%": the same amount as a percentage
            value = f"\\frac{{{value}}}{{100}}"
        if _squash(value) == _squash(final) or \
                (same_answer is not None and same_answer(value, final)):
            continue
        other_unit = _unit(match.group("unit") or "")
        if own_unit and other_unit and own_unit != other_unit:
            continue  # "$18 a day, or $126 a week": the same amount in other units
        return True
    return False
