"""IFEval "detectable_content:*": placeholders and postscripts."""

from __future__ import annotations

import re

from rlvr.verifiers.ifeval.registry import instruction


@instruction("detectable_content:number_placeholders", "at least N [placeholders] in "
             "square brackets", num_placeholders="int")
def number_placeholders(response: str, num_placeholders: int) -> bool:
    return len(re.findall(r"\[.*?\]", response)) >= num_placeholders


@instruction("detectable_content:postscript", "a line starts with the postscript marker "
             "('P.S.', 'P.P.S' or any marker, case-insensitive)", postscript_marker="pattern")
def postscript(response: str, postscript_marker: str) -> bool:
    marker = postscript_marker.strip()
    if marker == "P.P.S":
        pattern = r"\s*p\.\s?p\.\s?s.*$"
    elif marker == "P.S.":
        pattern = r"\s*p\.\s?s\..*$"
    else:
        pattern = r"\s*" + marker.lower() + r".*$"
    return bool(re.findall(pattern, response.lower(), flags=re.MULTILINE))
