"""IFEval "language:response_language": the whole response is in the given language
(langdetect's guess). Text with nothing to detect counts as followed, as in IFEval."""

from __future__ import annotations

from rlvr.verifiers.ifeval.registry import instruction
from rlvr.verifiers.ifeval.text import LanguageUnknown, detect_language


@instruction("language:response_language", "the response is in the given language "
             "(ISO 639-1 code, langdetect)", language="language")
def response_language(response: str, language: str) -> bool:
    try:
        return detect_language(response) == language
    except LanguageUnknown:
        return True
