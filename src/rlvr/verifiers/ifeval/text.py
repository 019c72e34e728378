"""Text measures shared by the instruction checkers: words, sentences, tokens, language.

IFEval (Zhou et al. 2023, google-research `instruction_following_eval`) counts words
with the regex tokenizer `\\w+`, sentences with NLTK's pre-trained punkt model and
capital words with NLTK's Treebank `word_tokenize`. Both NLTK pieces need data that NLTK
downloads at run time, which rlvr never does, so this module carries offline
equivalents (departures documented on each function). Language detection uses the
`langdetect` package (profiles ship inside the wheel), seeded so a verdict is
reproducible (IFEval leaves it unseeded).
"""

from __future__ import annotations

import functools
import re

RELATIONS = ("less than", "at least")  # IFEval's two comparison relations

_WORD = re.compile(r"\w+")


def compare(count: int, relation: str, threshold: int) -> bool:
    """IFEval's relation: 'less than' is count < threshold, 'at least' is >=."""
    return count < threshold if relation == "less than" else count >= threshold


def count_words(text: str) -> int:
    """Words as IFEval counts them: runs of `\\w` characters ("don't" is two)."""
    return len(_WORD.findall(text))


# Words as a reader sees them, for rlvr's own constraints: runs of word characters
# joined by inner apostrophes or hyphens ("don't", "well-known" are one word each).
_READER_WORD = re.compile(r"\w+(?:['\u2019-]\w+)*")


def reader_words(text: str) -> list[str]:
    return _READER_WORD.findall(text)


# --- sentences ---------------------------------------------------------------------
# An equivalent of punkt's English model for counting: a sentence ends at '.', '?' or
# '!' (possibly repeated, possibly followed by closing quotes or brackets) that is
# followed by whitespace or the end of the text. Like punkt, a line break alone does
# not end a sentence, a period inside a token ("3.14", "e.g.x") is no boundary, and a
# period after a known abbreviation or a single-letter initial ("Dr.", "J.") is no
# boundary. Departure: punkt learned its abbreviation list and orthographic statistics
# from a corpus; here the list is fixed (below) and an ellipsis ends a sentence only
# when the next word is capitalised.
_ABBREVIATIONS = frozenset("""
mr mrs ms dr prof sr jr st mt vs etc e.g i.e cf al inc ltd co corp dept univ
jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun
no nos vol fig figs approx est gen gov sen rep lt col capt sgt u.s u.k a.m p.m
ph.d b.a m.a b.sc m.sc
""".split())

_CANDIDATE = re.compile(r"""(\S*?)([.?!]+)(["'\u201d\u2019)\]]*)(?=\s|$)""")


def _is_boundary(text: str, match: re.Match[str]) -> bool:
    word, marks = match.group(1), match.group(2)
    if "?" in marks or "!" in marks:
        return True
    rest = text[match.end():].lstrip()
    if marks.startswith(".."):  # an ellipsis: a break only before a capitalised word
        return not rest or rest[0].isupper()
    core = word.lstrip("\"'(\u201c\u2018[").lower()
    if core in _ABBREVIATIONS:
        return False
    if len(core) == 1 and core.isalpha():  # an initial: "J. R. R. Tolkien"
        return False
    return True


def split_sentences(text: str) -> list[str]:
    """Sentences of `text` (stripped, non-empty), split as described above."""
    sentences, start = [], 0
    for match in _CANDIDATE.finditer(text):
        if match.group(1) == "" and match.start() == start:
            continue  # punctuation alone at a sentence start belongs to what follows
        if _is_boundary(text, match):
            sentences.append(text[start:match.end()].strip())
            start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return [s for s in sentences if s]


def count_sentences(text: str) -> int:
    return len(split_sentences(text))


# --- tokens for capital-word counting -----------------------------------------------
# NLTK's Treebank word_tokenize splits contractions ("DON'T" -> "DO", "N'T"; "IT'S" ->
# "IT", "'S"), keeps hyphenated words whole and separates punctuation. This regex
# reproduces those cases; punctuation tokens are dropped (never upper case anyway).
_TREEBANK_LIKE = re.compile(r"(?i)\w+?(?=n't\b)|n't\b|'\w+|\w+(?:[-.]\w+)*")


def word_tokens(text: str) -> list[str]:
    return _TREEBANK_LIKE.findall(text)


# --- language ----------------------------------------------------------------------
class LanguageUnknown(Exception):
    """langdetect found no features in the text (IFEval counts that as followed)."""


@functools.lru_cache(maxsize=1)
def _detector_factory():  # loaded once per process: reading the profiles takes ~0.5 s
    from langdetect import detector_factory

    detector_factory.init_factory()
    factory = detector_factory._factory
    factory.set_seed(0)  # langdetect samples n-grams at random; a reward must not
    return factory


def detect_language(text: str) -> str:
    """ISO 639-1 code of `text`'s language (langdetect, seed 0, deterministic)."""
    from langdetect.lang_detect_exception import LangDetectException

    try:
        detector = _detector_factory().create()
        detector.append(text)
        return detector.detect()
    except LangDetectException as exc:
        raise LanguageUnknown(str(exc)) from exc


def supported_languages() -> frozenset[str]:
    return frozenset(_detector_factory().get_lang_list())
