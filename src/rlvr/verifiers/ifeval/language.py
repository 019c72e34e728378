"""IFEval "language:response_language": the whole response is in the given language
(langdetect's guess). Text with nothing to detect (digits, punctuation) counts as
followed, as in IFEval, unless the verifier says otherwise (`unknown_follows`)."""

from __future__ import annotations

from rlvr.verifiers.ifeval.registry import instruction
from rlvr.verifiers.ifeval.text import LanguageUnknown, detect_language


@instruction("language:response_language", "the response is in the given language "
             "(ISO 639-1 code, langdetect)", uses_language=True, language="language")
def response_language(response: str, language: str, *, unknown_follows: bool = True) -> bool:
    try:
        return detect_language(response) == language
    except LanguageUnknown:
        return unknown_follows
