"""A cheap pre-check: does the completion address the judge instead of the task?

This is the second line of defence, not the first (that is `prompt.py`: the judge only
ever sees the completion as quoted data). It catches the plain attempts a policy finds
first, before they cost a judge call, and names them in the verdict's details, so a
run's logs show the policy trying. The text is NFKC-normalised and stripped of
invisible format characters (zero-width spaces, joiners) first, so full-width letters
and zero-width splits do not hide a phrase. Patterns are still English and literal: a
paraphrase, another language, a homoglyph from another script or base64 gets past them
and then meets the quoting alone (docs/rewards.md, "The injection guard").
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable

from rlvr.verifiers.judge.quoting import fold

_FLAGS: dict[str, re.Pattern[str]] = {
    "ignore_instructions": re.compile(
        r"\b(ignore|disregard|forget|override)\b[^.\n]{0,40}\b(instructions?|rubric|rules?|"
        r"criteria|prompt|grading|above|previous|prior)\b", re.I),
    "asks_for_score": re.compile(
        r"\b(give|award|assign)\s+(me|this|it|the answer|my answer)?\s*(an?\s+)?(full|"
        r"perfect|maximum|max|top|high|10|ten)\b"
        r"|\b(score|grade|rate|mark)\s+(this|me|it|my answer|the answer)\b[^.\n]{0,20}"
        r"\b(10|ten|full|max(imum)?|perfect|100)\b"
        r"|\b(full|perfect|maximum|top)\s+(score|marks?|points|grade)\b"
        r"|\bscore\s*[:=]?\s*(it\s+|this\s+|me\s+)?(a\s+)?(10|ten)\b(?!\s*(to|-|:)\s*\d)",
        re.I),
    "addresses_grader": re.compile(
        r"\b(dear|attention|note (to|for)( the)?|hey|hello)\s+(the\s+)?(grader|judge|"
        r"evaluator|assessor|reviewer)\b|\b(as|you are) (the|a|an) (grader|judge|evaluator)\b"
        r"|\b(grader|judge|evaluator)\s*[:,]", re.I),
    "fake_markup": re.compile(
        r"\[\s*\[\s*/?\s*(END\s+)?ANSWER|\bEND[\s_-]{0,4}(OF[\s_-]{0,4})?ANSWER\s*[\]\)>]"
        r"|<\|[^|<>\n]{0,40}\|>|</?\s*(system|assistant|user|"
        r"answer|candidate|data|rubric|instructions?)\s*>|^\s*(system|assistant)\s*:"
        r"|\[/?(INST|SYSTEM_PROMPT)\]|<</?SYS>>|<(start|end)_of_turn>|<[be]os>",
        re.I | re.M),
}
# A key and its separator in any JSON-like spelling: "c1": / 'c1': / c1: / `c1` = /
# \"c1\": (JSON inside a string) / &quot;c1&quot;: , right after `{`, `,` or a line start.
_QUOTE = r"(?:&quot;|\\?[\"'`])?"


def injection_flags(completion: str, criterion_ids: Iterable[str]) -> list[str]:
    """The names of the patterns `completion` matches, in a fixed order ([] if none).
    "forged_verdict": it holds an object (braces) keyed by the rubric's criterion ids."""
    text = _visible(completion)
    flags = [name for name, pattern in _FLAGS.items() if pattern.search(text)]
    if _forges_verdict(text, tuple(criterion_ids)):
        flags.append("forged_verdict")
    return flags


def _visible(text: str) -> str:
    """NFKC without format characters (category Cf: zero-width space, joiners, marks)."""
    return "".join(ch for ch in fold(text) if unicodedata.category(ch) != "Cf")


def _forges_verdict(text: str, ids: tuple[str, ...]) -> bool:
    """Whether a brace opens an object whose keys (any quoting, `:` or `=`) include a
    rubric id: JSON, a Python dict, JS, YAML-in-braces, escaped JSON all count."""
    if not ids:
        return False
    names = "|".join(re.escape(i) for i in sorted(set(ids), key=len, reverse=True))
    pattern = re.compile(r"\{(?:[^{}]{0,400}?[,\n])?\s*" + _QUOTE + r"\s*(?:" + names + r")\b\s*"
                         + _QUOTE + r"\s*(?::|=>?)", re.I)
    return pattern.search(text) is not None
