"""The "ifeval" verifier: IFEval's 25 instruction checks plus rlvr's own ("rlvr:*").

Layout: `text.py` (word, sentence, token and language measures, offline), `registry.py`
(instruction ids -> checkers with kwargs validation), one module per instruction group
(keywords, language, length, detectable_content, format, change_case, combination,
startend, punctuation, extra), and `verifier.py` (the verifier itself).
"""

from rlvr.verifiers.ifeval.registry import all_instructions
from rlvr.verifiers.ifeval.verifier import IfevalVerifier, parse_reference

__all__ = ["IfevalVerifier", "all_instructions", "parse_reference"]
