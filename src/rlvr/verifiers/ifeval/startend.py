"""IFEval "startend:*": end with a phrase; wrap the response in double quotes."""

from __future__ import annotations

from rlvr.verifiers.ifeval.registry import instruction


@instruction("startend:end_checker", "ends with the exact phrase (case-insensitive; "
             "surrounding double quotes ignored)", end_phrase="str")
def end_checker(response: str, end_phrase: str) -> bool:
    return response.strip().strip('"').lower().endswith(end_phrase.strip().lower())


@instruction("startend:quotation", "the whole response is wrapped in double quotes")
def quotation(response: str) -> bool:
    value = response.strip()
    return len(value) > 1 and value[0] == '"' and value[-1] == '"'
