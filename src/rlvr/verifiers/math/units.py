"""Words after a number: a unit to strip, or words that make the answer unreadable.

Only a known vocabulary of units is stripped, in any arrangement of `\\text{}`,
`\\mathrm{}` (normalize.py spells both `\\text`), spaces, `/`, "per" and exponents:
`18 \\,\\text{dollars}`, `12\\,\\mathrm{m}^2`, `12 \\, \\text{cm}^2`, `60 \\text{ km/h}`,
`5 \\text{ square units}` (a one-letter unit only in `\\text{}` or a rate such as `5 m/s`:
a plain `2 m` is 2m). One
more word is read as what is counted, as GSM8K writes
("42 apples"): a single plain word of three letters or more after a plain number,
unless it is one of the words that change or qualify a value (`_NOT_COUNTED`:
"minus", "dozen", "squared", "approximately", ...). Any other words after a number
(`450 \\text{ minus one}`, `450 \\text{ at most}`) are not a unit: the verifier calls the
answer unparseable rather than grade the number with its qualifier dropped.

Words that join values ("or", "and", "not") and verbs ("is", "equals") are left in
place for the hedging checks and the prose rule (expressions.py).
"""

from __future__ import annotations

import re

_UNIT_WORDS = frozenset("""
dollar cent euro pound yen rupee usd eur gbp
m cm mm km nm meter metre centimeter centimetre millimeter millimetre kilometer kilometre
in inch inche ft foot feet yd yard mi mile acre hectare ha
l ml liter litre milliliter millilitre gallon gal quart pint cup cc
g kg mg gram kilogram milligram lb lbs oz ounce ton tonne
s sec second min minute h hr hour day week month year yr
mph kph kmh degree deg rad radian unit square sq cubic per
""".split())
# A single word after a number that is not what is counted: it changes the value or
# qualifies it, so dropping it would grade a different answer.
_NOT_COUNTED = frozenset("""
minus plus times over under less more least most about approximately approx roughly
around nearly almost maybe perhaps possibly probably likely exactly only total
half halves double twice triple dozen dozens score hundred hundreds thousand thousands
million millions billion billions trillion squared cubed percent percentage
ago left remaining extra off fewer greater smaller larger max maximum minimum
""".split())
_CONNECTIVES = re.compile(r"\b(?:or|and|not|nor|either)\b", re.IGNORECASE)
_VERBS = re.compile(r"\b(?:is|are|equals?|gives?|makes?|was|be)\b", re.IGNORECASE)
# the tail after a number: `\text{...}` without digits, plain words, `^2`, `/`
_TAIL = re.compile(r"^(?P<head>.*?\S)(?P<tail>(?:\s*(?:\\text\s*\{[^{}\d]*\}|(?<![\\A-Za-z])"
                   r"[A-Za-z]+|\^\s*\{?\s*\d\s*\}?|/))+)\s*\.?$", re.S)
_PLAIN_NUMBER = re.compile(r"^-?\d[\d,]*(?:\.\d+)?$")


def _words(tail: str) -> list[str]:
    inner = re.sub(r"\\text\s*\{([^{}]*)\}", r" \1 ", tail)
    inner = re.sub(r"\^\s*\{?\s*\d\s*\}?|/", " ", inner)
    return inner.split()


def _is_unit(word: str) -> bool:
    lowered = word.lower()
    return any(form in _UNIT_WORDS for form in (lowered, lowered[:-1] if lowered.endswith("s")
                                                 else lowered))


def split_unit(text: str) -> tuple[str, bool]:
    """(`text` without its trailing unit, whether words that are no unit follow the
    number). `15 \\text{ cm}^2` -> ("15", False); `450 \\text{ at most}` -> (unchanged,
    True); `2x` and `\\text{Evelyn}` -> (unchanged, False)."""
    match = _TAIL.match(text)
    if not match:
        return text, False
    head, tail = match.group("head").strip(), match.group("tail")
    words = _words(tail)
    if not words or _CONNECTIVES.search(tail) or _VERBS.search(tail):
        return text, False
    plain_tail = "\\text" not in tail
    if not re.search(r"[\d}]", head if not plain_tail else head[-1:]):
        return text, False  # `\\text{Evelyn}`, `x m`: no number for a unit to follow
    rate = "/" in tail and all(_is_unit(w) for w in words)  # `km/h`, `m/s`: a unit
    if plain_tail and (not re.match(r"\s", tail) or any(len(w) == 1 for w in words) and not rate
                       or all(len(w) <= 2 and not _is_unit(w) for w in words)):
        return text, False  # `2x`, `3 x`, `2 m`, `2 xy`: variables, not words
    if all(_is_unit(w) for w in words):
        return head, False
    if len(words) == 1 and len(words[0]) >= 3 and words[0].lower() not in _NOT_COUNTED \
            and _PLAIN_NUMBER.match(head) and re.fullmatch(r"[A-Za-z]+", words[0]):
        return head, False  # "42 apples": what is counted
    return text, True
