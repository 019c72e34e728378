"""A cheap pre-check: does the completion address the judge instead of the task?

This is the second line of defence, not the first (that is `prompt.py`: the judge only
ever sees the completion as quoted data). It catches the plain attempts a policy finds
first, before they cost a judge call, and names them in the verdict's details, so a
run's logs show the policy trying. Patterns are English and literal; a paraphrase gets
past them and then meets the quoting alone.
"""

from __future__ import annotations

import json
import re
from typing import Iterable

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
        r"\[\[\s*/?\s*(END\s+)?ANSWER|<\|[^|<>\n]{0,40}\|>|</?\s*(system|assistant|user|"
        r"answer|candidate|data|rubric|instructions?)\s*>|^\s*(system|assistant)\s*:",
        re.I | re.M),
}
_JSON_OBJECT = re.compile(r"\{[^{}]{0,2000}\}")


def injection_flags(completion: str, criterion_ids: Iterable[str]) -> list[str]:
    """The names of the patterns `completion` matches, in a fixed order ([] if none).
    "forged_verdict": it holds a JSON object keyed by the rubric's criterion ids."""
    flags = [name for name, pattern in _FLAGS.items() if pattern.search(completion)]
    if _forges_verdict(completion, set(criterion_ids)):
        flags.append("forged_verdict")
    return flags


def _forges_verdict(completion: str, ids: set[str]) -> bool:
    for match in _JSON_OBJECT.finditer(completion):
        try:
            data = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(data, dict) and ids & set(data):
            return True
    return False
