"""IFEval "change_case:*": all capitals, all lowercase, counts of capitalised words."""

from __future__ import annotations

from rlvr.verifiers.ifeval.registry import instruction
from rlvr.verifiers.ifeval.text import LanguageUnknown, compare, detect_language, word_tokens


def _is_english(response: str, unknown_follows: bool) -> bool:
    try:
        return detect_language(response) == "en"
    except LanguageUnknown:
        return unknown_follows  # IFEval: undetectable language counts as followed


@instruction("change_case:english_capital", "English, all capital letters", uses_language=True)
def english_capital(response: str, *, unknown_follows: bool = True) -> bool:
    return response.isupper() and _is_english(response, unknown_follows)


@instruction("change_case:english_lowercase", "English, all lowercase letters",
             uses_language=True)
def english_lowercase(response: str, *, unknown_follows: bool = True) -> bool:
    return response.islower() and _is_english(response, unknown_follows)


@instruction("change_case:capital_word_frequency", "words in ALL CAPS occur 'less than' / "
             "'at least' N times", capital_frequency="int", capital_relation="relation")
def capital_word_frequency(response: str, capital_frequency: int, capital_relation: str) -> bool:
    capitals = sum(1 for token in word_tokens(response) if token.isupper())
    return compare(capitals, capital_relation, capital_frequency)
