"""IFEval "keywords:*" instructions. Keywords are matched as regular expressions,
case-insensitively, exactly as IFEval does (so "le" also matches inside "let")."""

from __future__ import annotations

import re
from collections import Counter

from rlvr.verifiers.ifeval.registry import instruction
from rlvr.verifiers.ifeval.text import compare


@instruction("keywords:existence", "every keyword appears (case-insensitive regex search)",
             keywords="str_list")
def keywords_exist(response: str, keywords: list[str]) -> bool:
    return all(re.search(k, response, flags=re.IGNORECASE) for k in keywords)


@instruction("keywords:forbidden_words", "no forbidden word appears as a whole word",
             forbidden_words="str_list")
def no_forbidden_words(response: str, forbidden_words: list[str]) -> bool:
    return not any(re.search(r"\b" + w + r"\b", response, flags=re.IGNORECASE)
                   for w in forbidden_words)


@instruction("keywords:frequency", "the keyword occurs 'less than' / 'at least' N times",
             keyword="pattern", frequency="int", relation="relation")
def keyword_frequency(response: str, keyword: str, frequency: int, relation: str) -> bool:
    found = len(re.findall(keyword.strip(), response, flags=re.IGNORECASE))
    return compare(found, relation, frequency)


@instruction("keywords:letter_frequency", "a letter occurs 'less than' / 'at least' N "
             "times (case-insensitive)", letter="char", let_frequency="int",
             let_relation="relation")
def letter_frequency(response: str, letter: str, let_frequency: int, let_relation: str) -> bool:
    return compare(Counter(response.lower())[letter.lower()], let_relation, let_frequency)
